import { Counter, Gauge, type Registry } from 'prom-client';
import { CHECK_IDS, duplicateCreationRatio, type StoredReconcileRun } from '@tickets/reconcile';

/** How long one read of the newest run serves the next scrapes. */
const LATEST_CACHE_MS = 5_000;

/**
 * The reconciliation's findings as metrics, read from the newest reconcile_runs row at scrape time
 * (cached 5 s), so every API process reports the same values whichever process (or the CLI) ran it.
 * No row yet: the gauges are absent (an alert on absent() catches a schedule that never ran).
 */
export class ReconcileMetrics {
  readonly runs: Counter<'result'>;

  constructor(registry: Registry, latest: () => Promise<StoredReconcileRun | null>) {
    const registers = [registry];
    let cached: { at: number; run: StoredReconcileRun | null } | undefined;
    let reading: Promise<void> | undefined;
    const read = async () => {
      if (!cached || performance.now() - cached.at >= LATEST_CACHE_MS) {
        reading ??= latest()
          .then((run) => void (cached = { at: performance.now(), run }))
          .catch(() => undefined) // the database is down: keep the last values
          .finally(() => (reading = undefined));
        await reading;
      }
      return cached?.run ?? null;
    };
    const gauge = (name: string, help: string, value: (run: StoredReconcileRun) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const run = await read();
          if (run) this.set(value(run));
        },
      });
    gauge(
      'tickets_reconcile_last_run_timestamp_seconds',
      'When the newest reconciliation run (scheduled or CLI) finished, Unix seconds',
      (r) => r.finishedAt.getTime() / 1000,
    );
    gauge(
      'tickets_reconcile_tickets_checked',
      "Tickets created inside the newest run's window (RECONCILE_WINDOW)",
      (r) => r.ticketsChecked,
    );
    gauge(
      'tickets_reconcile_duplicate_tickets',
      "Tickets of the newest run's window duplicating an earlier one (same externalRef in the tenant, or same intent)",
      (r) => r.duplicateTickets,
    );
    gauge(
      'tickets_reconcile_duplicate_creation_ratio',
      'Duplicate tickets / tickets checked in the newest run (ideal 0; alert above 0.001)',
      duplicateCreationRatio,
    );
    new Gauge({
      name: 'tickets_reconcile_findings',
      help: 'Offending rows per check in the newest reconciliation run (0: the check agreed)',
      labelNames: ['check'],
      registers,
      async collect() {
        const run = await read();
        if (!run) return;
        const counts = new Map(run.findings.map((f) => [f.id, f.count]));
        for (const check of CHECK_IDS) this.set({ check }, counts.get(check) ?? 0);
      },
    });
    this.runs = new Counter({
      name: 'tickets_reconcile_scheduled_runs_total',
      help: 'Scheduled reconciliation runs made by this process, by result (ok, failed)',
      labelNames: ['result'],
      registers,
    });
  }
}
