import type { Registry } from 'prom-client';

/** The counter the API increments once per keyed request, labelled by outcome. */
export const IDEMPOTENCY_OUTCOMES_METRIC = 'tickets_idempotency_outcomes_total';

export interface OutcomeMinute {
  /** Start of the interval. */
  at: Date;
  /** Requests per outcome in the interval. */
  counts: Record<string, number>;
}

export type OutcomeHistory =
  { state: 'missing'; metric: string } | { state: 'ok'; outcomes: string[]; minutes: OutcomeMinute[] };

interface Sample {
  at: number;
  totals: Map<string, number>;
}

/**
 * Samples the idempotency-outcome counter of this API process into a ring buffer (one sample per
 * interval, the last hour kept), so the console can chart the outcomes without Prometheus. The
 * counter is read by name from the registry: until a build exports it, history() says it is missing.
 */
export class IdempotencySampler {
  private readonly ring: Sample[] = [];

  constructor(
    private readonly registry: Registry,
    private readonly keep = 60,
  ) {}

  /** Reads the counter now and appends the sample (the oldest beyond `keep` + 1 is dropped). */
  async sample(now = Date.now()): Promise<void> {
    const totals = await this.read();
    if (!totals) return;
    this.ring.push({ at: now, totals });
    if (this.ring.length > this.keep + 1) this.ring.shift();
  }

  /** Per interval between samples, oldest first, and the interval since the last sample up to now. */
  async history(now = Date.now()): Promise<OutcomeHistory> {
    const current = await this.read();
    if (!current) return { state: 'missing', metric: IDEMPOTENCY_OUTCOMES_METRIC };
    const points = [...this.ring, { at: now, totals: current }];
    const outcomes = [...new Set(points.flatMap((p) => [...p.totals.keys()]))].sort();
    const minutes: OutcomeMinute[] = [];
    for (let i = 1; i < points.length; i++) {
      const counts: Record<string, number> = {};
      // A counter only grows; a drop means the registry was reset, and then the new value is the delta.
      for (const o of outcomes) {
        const a = points[i - 1].totals.get(o) ?? 0;
        const b = points[i].totals.get(o) ?? 0;
        counts[o] = b >= a ? b - a : b;
      }
      minutes.push({ at: new Date(points[i - 1].at), counts });
    }
    return { state: 'ok', outcomes, minutes };
  }

  private async read(): Promise<Map<string, number> | undefined> {
    const metric = this.registry.getSingleMetric(IDEMPOTENCY_OUTCOMES_METRIC);
    if (!metric) return undefined;
    const { values } = await metric.get();
    const totals = new Map<string, number>();
    for (const v of values) {
      const outcome = String(v.labels.outcome ?? '(none)');
      totals.set(outcome, (totals.get(outcome) ?? 0) + v.value);
    }
    return totals;
  }
}
