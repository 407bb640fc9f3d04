import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import type { PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import { reconcileReport } from './reconcile';
import { ReconcileRunsRepository, type StoredReconcileRun } from './reconcile-runs.repository';
import { ScheduleLockRepository } from './schedule-lock.repository';

export interface ReconcileScheduleSettings {
  databaseUrl: string;
  /** One scheduled run per this interval across every process sharing the database. */
  intervalMs: number;
  /** The run's `since` (now - windowMs) and `grace` (now - graceMs), as the CLI's --since and --grace. */
  windowMs: number;
  graceMs: number;
  /** The notifier group whose inbox and notifications are checked. */
  group: string;
  /** How often a process looks whether a run is due (default: min(interval, 1 min)). */
  checkEveryMs?: number;
  /**
   * After each check the run waits this many times as long as the check took (default 1): its statements
   * run at most half of the run's time, and the live traffic's statements get the gaps. 0: back to back.
   */
  paceRatio?: number;
  /** How long prepare() waits for its read before the process starts without it (default 3 s). */
  prepareWaitMs?: number;
}

/** The longest wait between two attempts of a process whose scheduled runs keep failing. */
const MAX_RETRY_WAIT_MS = 3_600_000;

function formatWait(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.max(1, Math.round(ms / 1000))} s`;
}

/**
 * Runs the reconciliation on a schedule inside a long-running process (the API). Every process
 * looks every `checkEveryMs` whether a run is due; under a session advisory lock (one process at
 * a time) the one that finds the newest scheduled run older than `intervalMs` runs it and records
 * it in reconcile_runs. So any number of API processes make one run per interval, and a restart
 * neither skips a run nor repeats one. The lock lives on a connection of its own, held only while
 * deciding and running; the checks run through Prisma as separate read-only statements, paced
 * (`paceRatio`): a run beside live traffic trades its own duration for the traffic's latency.
 */
export class ReconcileSchedule {
  private readonly runs: ReconcileRunsRepository;
  private readonly lock = new ScheduleLockRepository();
  private timer?: NodeJS.Timeout;
  private tick?: Promise<void>;
  private stopped = false;
  /** Aborted by stop(): a run in progress skips its remaining pauses. */
  private readonly hurry = new AbortController();
  /** Failed runs in a row, and the looks still to skip after the last one (see runIfDue). */
  private failures = 0;
  private skipLooks = 0;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly settings: ReconcileScheduleSettings,
    private readonly log?: Logger,
    /** Called after each run this process recorded (metrics), and with the error of a failed one. */
    private readonly onRun?: (run: StoredReconcileRun | null, error?: unknown) => void,
  ) {
    this.runs = new ReconcileRunsRepository(prisma);
  }

  start(): void {
    if (this.settings.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.runIfDue(), this.lookEveryMs);
    this.timer.unref();
  }

  /**
   * Reads the newest scheduled run once, before the process takes traffic, and logs it with when this
   * process runs the next one. That read is each look's first statement, and in the API the first Prisma
   * model query of the process: its first call sets up Prisma's query compiler and compiles the query in one
   * synchronous stretch (about 21 ms of a blocked event loop on a quiet 2-core VM, 21-51 ms at 300 creates a
   * second). Without this read the stretch fell on the first look, a minute after the start, inside live
   * traffic (docs/benchmarks.md, "The first look of the scheduled reconciliation, and the first loop"). A
   * failed read is logged, not thrown, and so is one that takes longer than `prepareWaitMs` (a lock on
   * reconcile_runs must not keep the process from starting): every look reads again. With the schedule off
   * (intervalMs <= 0) it reads nothing.
   */
  async prepare(): Promise<StoredReconcileRun | null> {
    if (this.settings.intervalMs <= 0) return null;
    const waitMs = this.settings.prepareWaitMs ?? 3_000;
    const read = this.runs.latest('schedule');
    read.catch(() => undefined); // still running when the wait below gives up: its outcome no longer matters
    let last: StoredReconcileRun | null;
    try {
      const first = await Promise.race([read, sleep(waitMs, 'gave up' as const, { ref: false })]);
      if (first === 'gave up') {
        this.log?.warn(
          { waitMs },
          `scheduled reconcile: the newest run was not read within ${waitMs} ms (a lock on reconcile_runs? ` +
            'see pg_locks); the process starts without it, and the first look reads it again',
        );
        return null;
      }
      last = first;
    } catch (err) {
      this.log?.warn({ err }, 'scheduled reconcile: could not read the newest run; the first look tries again');
      return null;
    }
    const dueInMs = last ? last.finishedAt.getTime() + this.settings.intervalMs - Date.now() : 0;
    const nextRunInMs = Math.ceil(Math.max(dueInMs, 1) / this.lookEveryMs) * this.lookEveryMs;
    this.log?.info(
      {
        lastRunId: last?.id ?? null,
        lastRunFinishedAt: last?.finishedAt.toISOString() ?? null,
        lastRunFindings: last && Array.isArray(last.findings) ? last.findings.length : null,
        nextRunInMs,
      },
      `scheduled reconcile: ${last ? `the newest run finished ${last.finishedAt.toISOString()}` : 'no run recorded yet'}; ` +
        `the next runs in about ${formatWait(nextRunInMs)} (one process of those sharing the database runs it)`,
    );
    return last;
  }

  /** Stops looking; a run in progress finishes without its pauses (its statements are short and read-only). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.hurry.abort();
    clearInterval(this.timer);
    await this.tick;
  }

  /** The wait after a check of `checkMs`: paceRatio times as long, cut short by stop(). */
  private pause(checkMs: number): Promise<void> {
    const ms = checkMs * (this.settings.paceRatio ?? 1);
    if (ms <= 0 || this.hurry.signal.aborted) return Promise.resolve();
    return sleep(ms, undefined, { signal: this.hurry.signal, ref: false }).catch(() => undefined);
  }

  /** At least 1 ms (Node runs a 0 ms interval every millisecond). */
  private get lookEveryMs(): number {
    return Math.max(1, this.settings.checkEveryMs ?? Math.min(this.settings.intervalMs, 60_000));
  }

  /**
   * One look: runs the reconciliation when it is due and no other process is at it. Resolves with the
   * recorded run, if any. A failed run is not recorded, so it would be due again at the next look: after
   * n failures in a row this process skips 2^(n-1) - 1 looks (none, 1, 3, 7 ...), waiting at most an hour
   * between attempts, so a check that keeps failing (a database that times it out) is not run over the
   * whole window every minute. Any success ends the backoff.
   */
  runIfDue(): Promise<StoredReconcileRun | null> {
    if (this.tick || this.stopped) return Promise.resolve(null);
    if (this.skipLooks > 0) {
      this.skipLooks--;
      return Promise.resolve(null);
    }
    const done = this.lookAndRun()
      .then(
        (run) => {
          this.failures = 0;
          if (run) this.onRun?.(run);
          return run;
        },
        (err: unknown) => {
          this.failures++;
          const maxSkips = Math.max(0, Math.floor(MAX_RETRY_WAIT_MS / this.lookEveryMs) - 1);
          this.skipLooks = Math.min(2 ** Math.min(this.failures - 1, 30) - 1, maxSkips);
          const retryInMs = (this.skipLooks + 1) * this.lookEveryMs;
          this.log?.warn(
            { err, failuresInARow: this.failures, retryInMs },
            `scheduled reconcile failed; this process tries again in ${formatWait(retryInMs)} (the wait doubles with each failure in a row, up to an hour; npm run cli -- reconcile runs it now)`,
          );
          this.onRun?.(null, err);
          return null;
        },
      )
      // The look is over when its caller hears of it: a look right after finds none in progress.
      .finally(() => (this.tick = undefined));
    this.tick = done.then(() => undefined);
    return done;
  }

  private async ranRecently(): Promise<boolean> {
    const last = await this.runs.latest('schedule');
    return last !== null && Date.now() - last.finishedAt.getTime() < this.settings.intervalMs;
  }

  private async lookAndRun(): Promise<StoredReconcileRun | null> {
    // Most looks find a recent run: answer those from the pool, without opening the lock's connection.
    if (await this.ranRecently()) return null;
    const db = new Client({
      connectionString: this.settings.databaseUrl,
      application_name: 'reconcile-schedule',
      connectionTimeoutMillis: 5_000,
    });
    db.on('error', () => undefined); // a dropped connection frees the lock; the query in flight rejects
    await db.connect();
    try {
      if (!(await this.lock.tryLock(db))) return null;
      try {
        if (await this.ranRecently()) return null; // again under the lock: another process may just have run it
        const now = Date.now();
        const report = await reconcileReport(this.prisma, {
          since: new Date(now - this.settings.windowMs),
          grace: new Date(now - this.settings.graceMs),
          group: this.settings.group,
          tenant: null,
          pause: (checkMs) => this.pause(checkMs),
        });
        const run = await this.runs.record({ trigger: 'schedule', ...report });
        this.log?.info(
          {
            ticketsChecked: run.ticketsChecked,
            duplicateTickets: run.duplicateTickets,
            findings: run.findings.map((f) => ({ check: f.id, count: f.count })),
          },
          run.findings.length
            ? 'scheduled reconcile found disagreements (npm run cli -- reconcile shows what to do)'
            : 'scheduled reconcile: everything agrees',
        );
        return run;
      } finally {
        await this.lock.unlock(db).catch(() => undefined);
      }
    } finally {
      await db.end().catch(() => undefined);
    }
  }
}
