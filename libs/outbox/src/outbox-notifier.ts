import { Pool } from 'pg';
import type { Logger } from '@tickets/logger';
import { OUTBOX_NOTIFY_CHANNEL } from './outbox-relay';
import { OutboxRepository } from './outbox.repository';

/**
 * Calls `send` after every `request()`, at most once per `intervalMs`, and always with a send that
 * STARTS after the request (a send already in flight when a request comes may have been delivered
 * before the request's rows were committed, so it does not count for it). Sends never overlap.
 */
export class CoalescedSignal {
  private timer?: NodeJS.Timeout;
  private inFlight = false;
  private dirty = false;
  private lastSentAt = -Infinity;
  private closed = false;

  constructor(
    private readonly intervalMs: number,
    private readonly send: () => Promise<void>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  request(): void {
    if (this.closed) return;
    if (this.inFlight) {
      this.dirty = true;
      return;
    }
    if (this.timer) return; // the scheduled send starts after this request
    const wait = this.lastSentAt + this.intervalMs - this.now();
    if (wait <= 0) void this.fire();
    else this.timer = setTimeout(() => void this.fire(), wait);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    this.inFlight = true;
    this.dirty = false;
    this.lastSentAt = this.now();
    try {
      await this.send();
    } finally {
      this.inFlight = false;
      if (this.dirty) this.request();
    }
  }
}

/**
 * Wakes outbox relays in other processes after rows were committed: `pg_notify('outbox_events')` from a
 * connection of its own, outside the writer's transaction, at most once per `intervalMs`.
 *
 * Why not a trigger: a transaction that queued a NOTIFY takes, at commit, a lock that PostgreSQL holds
 * for the whole cluster until the commit record is flushed, so every create with a NOTIFY trigger
 * committed alone, one WAL flush each, at about half the rate of the same commit without it
 * (docs/benchmarks.md, "The schema's cost"). Sent from here, that lock is taken by a transaction that
 * writes nothing, at most 1000/intervalMs times a second, whatever the create rate.
 *
 * Call `committed()` only after the commit of rows the relay must publish. A lost notification (the
 * connection is down) costs latency, never rows: the relay's fallback poll finds them.
 */
export class OutboxNotifier {
  private readonly pool: Pool;
  private readonly signal: CoalescedSignal;
  private readonly repo = new OutboxRepository();
  private failing = false;

  constructor(opts: { databaseUrl: string; intervalMs: number; logger: Logger; applicationName?: string }) {
    this.pool = new Pool({
      connectionString: opts.databaseUrl,
      max: 1,
      application_name: opts.applicationName ?? 'outbox-notifier',
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
    });
    // An idle connection the server closed: the next send reconnects.
    this.pool.on('error', (err) =>
      opts.logger.warn({ err: err.message }, 'outbox notifier connection closed by the server'),
    );
    this.signal = new CoalescedSignal(opts.intervalMs, async () => {
      try {
        await this.repo.notify(this.pool, OUTBOX_NOTIFY_CHANNEL);
        if (this.failing) opts.logger.info('outbox notifier sends again');
        this.failing = false;
      } catch (err) {
        if (!this.failing)
          opts.logger.warn(
            { err: (err as Error).message },
            'outbox notifier could not send; relays in other processes fall back to their poll',
          );
        this.failing = true;
      }
    });
  }

  /** Rows were committed to outbox_events: wake the relays listening on other connections (coalesced, asynchronous). */
  committed(): void {
    this.signal.request();
  }

  async close(): Promise<void> {
    this.signal.close();
    await this.pool.end().catch(() => undefined);
  }
}
