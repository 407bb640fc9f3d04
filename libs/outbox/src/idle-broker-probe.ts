import type { OutageLog } from '@tickets/sleep';

/**
 * The broker's state while the leader has nothing to send. The sends and the topic set-up report to
 * the broker's OutageLog through `reporter`; with no report for `intervalMs` (an idle relay), one
 * cheap request to the broker (KafkaPublisher.probe, a metadata request) reports instead, so
 * /health/outbox says `unreachable` about a probe interval after the broker went away, not only once
 * a row is waiting. A probe's outcome is dropped when a send reported while it ran: sends know better.
 */
export class IdleBrokerProbe {
  private lastReportAt = Date.now();
  /** Counts the reports: a probe compares it, not the clock (a report in the probe's first millisecond counts too). */
  private reports = 0;
  private timer?: NodeJS.Timeout;
  private probing = false;

  constructor(
    private readonly state: OutageLog,
    private readonly probe: () => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  /** What the sends and the topic set-up report to: the broker's state, and the probe stands back. */
  readonly reporter = {
    failed: (err: unknown, fields?: Record<string, unknown>): number => {
      this.reports++;
      this.lastReportAt = Date.now();
      return this.state.failed(err, fields);
    },
    ok: (): void => {
      this.reports++;
      this.lastReportAt = Date.now();
      this.state.ok();
    },
  };

  /** While leading: probes every `intervalMs` that passed without a report. */
  start(): void {
    this.lastReportAt = Date.now();
    this.timer ??= setInterval(() => void this.tick(), this.intervalMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    const startedAt = Date.now();
    if (this.probing || startedAt - this.lastReportAt < this.intervalMs) return;
    this.probing = true;
    const reportsBefore = this.reports;
    try {
      await this.probe();
      if (this.reports === reportsBefore) this.state.ok({ by: 'idle probe' });
    } catch (err) {
      if (this.reports === reportsBefore) this.state.failed(err, { step: 'idle probe' });
    } finally {
      this.probing = false;
    }
  }
}
