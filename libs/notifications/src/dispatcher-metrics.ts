import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DeliveryOutcome = 'delivered' | 'retry' | 'dead';

export interface NotificationGaugeSource {
  /** Notifications of the group waiting to be sent (`pending`) and given up on (`dead`). */
  counts(): Promise<{ pending: number; dead: number }>;
}

/** How long the pending/dead counts read at one scrape serve the next ones (several scrapers, several gauges). */
const COUNTS_CACHE_MS = 5_000;

/**
 * The webhook dispatcher's Prometheus metrics for one consumer group, on the caller's registry.
 * Deliveries are counted as they are recorded (label children bound once, no allocation per delivery);
 * the pending/dead gauges are read from the database at scrape time, at most once per 5 s (the
 * (group_id, status, next_attempt_at) index answers the count); a scrape while the database is down
 * keeps the last values.
 */
export class DispatcherMetrics {
  private readonly outcomes: Record<
    DeliveryOutcome,
    { count: Counter.Internal; seconds: Histogram.Internal<'group' | 'outcome'> }
  >;

  constructor(registry: Registry, groupId: string, source: NotificationGaugeSource) {
    const registers = [registry];
    const deliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), retry (5xx, 408, 429, timeout, network error: due again later), dead (given up)',
      labelNames: ['group', 'outcome'],
      registers,
    });
    const latency = new Histogram({
      name: 'webhook_delivery_duration_seconds',
      help: 'Duration of one webhook HTTP attempt (request sent to response or timeout), by outcome',
      labelNames: ['group', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const bind = (outcome: DeliveryOutcome) => ({
      count: deliveries.labels(groupId, outcome),
      seconds: latency.labels(groupId, outcome),
    });
    this.outcomes = { delivered: bind('delivered'), retry: bind('retry'), dead: bind('dead') };

    let cached: { at: number; value?: { pending: number; dead: number } } = { at: -Infinity };
    let inflight: Promise<void> | undefined;
    const read = async () => {
      if (performance.now() - cached.at < COUNTS_CACHE_MS) return cached.value;
      inflight ??= source
        .counts()
        .then((value) => void (cached = { at: performance.now(), value }))
        .catch(() => undefined)
        .finally(() => (inflight = undefined));
      await inflight;
      return cached.value;
    };
    const gauges = [
      {
        name: 'notifications_pending',
        field: 'pending',
        help: 'Notifications of the group not yet delivered and not given up (due now, or waiting for a retry)',
      },
      {
        name: 'notifications_dead',
        field: 'dead',
        help: 'Notifications of the group given up on (status dead): requeue with npm run cli -- dead-letters requeue --kind notification',
      },
    ] as const;
    for (const { name, field, help } of gauges) {
      new Gauge({
        name,
        help,
        labelNames: ['group'],
        registers,
        async collect() {
          const c = await read();
          if (c) this.set({ group: groupId }, c[field]);
        },
      });
    }
  }

  /** One recorded attempt: its outcome and how long the HTTP request took. */
  delivery(outcome: DeliveryOutcome, durationMs: number): void {
    const o = this.outcomes[outcome];
    o.count.inc();
    o.seconds.observe(durationMs / 1000);
  }
}
