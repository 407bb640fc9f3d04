import { randomUUID } from 'node:crypto';
import { configDefaults } from '@tickets/config';
import { OutageLog, WakeableSleep } from '@tickets/sleep';
import { DispatcherMetrics } from './dispatcher-metrics';
import { ABANDONED, HttpPoster } from './http-post';
import { NotificationsRepository, type AttemptRecord, type ClaimedNotification } from './notifications.repository';
import { decideAttempt, type AttemptOutcome, type AttemptResult } from './retry-policy';
import { WebhookSecretCipher } from './secret-box';
import { postWebhook } from './webhook-request';
import type {
  DispatcherOptions,
  DispatcherSettings,
  DispatcherStats,
  HandOverLease,
  HandOverOptions,
  HandOverResult,
} from './webhook-dispatcher.types';

export type {
  DispatcherOptions,
  DispatcherSettings,
  DispatcherStats,
  HandOverLease,
  HandOverOptions,
  HandOverResult,
} from './webhook-dispatcher.types';

interface Finished {
  row: ClaimedNotification;
  result: AttemptResult;
  outcome: AttemptOutcome;
  done: (recorded: boolean) => void;
}

/**
 * Sends pending notifications as Standard Webhooks. Rows are claimed with FOR UPDATE SKIP LOCKED and
 * leased (next_attempt_at pushed to now + lease, lease_token set), so several dispatchers on the same
 * group never send the same notification at the same time; every result write is fenced by the token.
 * A dispatcher that dies mid-send leaves the lease to expire and the row is sent again with the same
 * webhook-id (at-least-once towards the receiver; the id is its dedup key).
 * Transactions: each claim is one short statement; the results of deliveries that finish close
 * together are recorded by one statement (per row still fenced by its lease token; every attempt row
 * is inserted whether or not the fence matched). A claim round runs on wake() (the consumer's inbox
 * commit, a retry falling due), on the poll, or when a slot frees while the last claim came back
 * full or was skipped for lack of free slots; not after every finished delivery. Never run inside a
 * caller's transaction, and no HTTP request is made while a database transaction is open.
 */
export class WebhookDispatcher {
  private readonly settings: Required<DispatcherSettings>;
  private readonly repo: NotificationsRepository;
  private readonly sleeper = new WakeableSleep();
  private running = false;
  private loop?: Promise<void>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly counters = { delivered: 0, retried: 0, dead: 0, handedOver: 0, recordedWithChunks: 0 };
  /** Slots promised to handOver() statements still running. */
  private reserved = 0;
  /** The last claim came back full or was skipped (no free slot): claim again when a slot frees. */
  private moreDue = false;
  private unrecorded: Finished[] = [];
  private flushTimer?: NodeJS.Timeout;
  private readonly flushes = new Set<Promise<void>>();
  private readonly http = new HttpPoster();
  /** Aborts the in-flight requests when stop() runs out of time. */
  private abandon = new AbortController();
  private readonly database: OutageLog;
  private readonly metrics?: DispatcherMetrics;
  private readonly cipher: WebhookSecretCipher;

  constructor(private readonly opts: DispatcherOptions) {
    const defaults = configDefaults().notifier;
    this.settings = {
      maxAttempts: opts.maxAttempts ?? defaults.maxAttempts,
      retryBaseMs: opts.retryBaseMs ?? defaults.retryBaseMs,
      retryMaxDelayMs: opts.retryMaxDelayMs ?? defaults.retryMaxDelayMs,
      timeoutMs: opts.timeoutMs ?? defaults.timeoutMs,
      leaseMs: opts.leaseMs ?? defaults.leaseMs,
      pollIntervalMs: opts.pollIntervalMs ?? defaults.pollIntervalMs,
      concurrency: opts.concurrency ?? defaults.concurrency,
      recordBatchSize: opts.recordBatchSize ?? defaults.recordBatchSize,
      recordFlushMs: opts.recordFlushMs ?? defaults.recordFlushMs,
      minClaimIntervalMs: opts.minClaimIntervalMs ?? defaults.minClaimIntervalMs,
      stopTimeoutMs: opts.stopTimeoutMs ?? defaults.stopTimeoutMs,
    };
    this.repo = new NotificationsRepository(opts.prisma);
    this.cipher = new WebhookSecretCipher(opts.secretKeys ?? defaults.secretKeys.keys);
    this.database = new OutageLog(opts.logger, 'database', this.settings.pollIntervalMs);
    if (opts.registry)
      this.metrics = new DispatcherMetrics(opts.registry, opts.groupId, {
        counts: () => this.repo.countOpen(opts.groupId),
      });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.sleeper.reset();
    this.abandon = new AbortController();
    this.loop = this.run();
  }

  /** Ask for an immediate claim round (called right after the inbox transaction commits). */
  wake(): void {
    this.sleeper.wake();
  }

  /**
   * Runs `create`, a statement that creates pending notifications of this group and commits them,
   * giving it a lease for as many of them as this dispatcher has free slots; the notifications it
   * leased are delivered at once, exactly as if this dispatcher had claimed them (no claim statement,
   * no wake-up round), and a wake-up is asked for the rest. The lease fences them from other
   * dispatchers like a claim's: if this process dies before sending, they are due again when it
   * expires. `create` gets no lease (undefined) while no slot is free or the dispatcher is stopped.
   *
   * With `{ records: true }`, `create` also gets the deliveries finished and not yet recorded, and must
   * record them in its statement (recordCtes): they count as recorded when it returns. Their slots count
   * as free for the lease (their requests are over). If `create` throws, they are recorded on their own at
   * once (as a flush would) and `create` runs once more without them, so a result that cannot be written
   * (a notification deleted meanwhile, a broken attempts table) never fails the caller's chunk.
   */
  async handOver<R extends HandOverResult>(
    maxLeased: number,
    create: (lease?: HandOverLease, records?: readonly AttemptRecord[]) => Promise<R>,
    options: HandOverOptions = {},
  ): Promise<R> {
    const records = options.records && this.running ? this.takeUnrecorded() : [];
    const busy = this.inFlight.size - records.length + this.reserved;
    const limit = this.running ? Math.min(maxLeased, this.settings.concurrency - busy) : 0;
    const lease = limit > 0 ? { token: randomUUID(), limit, leaseMs: this.settings.leaseMs } : undefined;
    if (lease) this.reserved += lease.limit;
    let result: R;
    let recorded = records.length > 0;
    try {
      try {
        result = await create(lease, recorded ? records.map(toRecord) : undefined);
      } catch (err) {
        if (!recorded) throw err;
        recorded = false;
        this.unrecorded.unshift(...records);
        this.flush();
        // A failure that is not the results' (the database down) fails the second run too, and the flush says so.
        this.opts.logger?.debug(
          { err, results: records.length },
          'a statement carrying delivery results failed: the results are recorded on their own, the statement runs again without them',
        );
        result = await create(lease, undefined);
      }
    } finally {
      if (lease) this.reserved -= lease.limit;
    }
    if (recorded) {
      this.counters.recordedWithChunks += records.length;
      records.forEach((f) => f.done(true));
    }
    const rows = result.leased;
    if (rows.length > 0 && this.running) {
      this.counters.handedOver += rows.length;
      for (const row of rows) this.track(this.deliver(row));
    } else if (rows.length > 0) {
      // Stopped meanwhile: give the leases back (due now, the attempt un-counted) instead of sending.
      this.track(this.release(rows));
    }
    if (result.pending > rows.length) this.wake();
    return result;
  }

  /**
   * Stops claiming (a claim already running has its rows released unsent), lets the deliveries in
   * flight finish for up to stopTimeoutMs, then abandons the rest; every finished or abandoned
   * delivery is recorded, and an abandoned one is due again at once (its lease released), so
   * another dispatcher sends it without waiting for NOTIFY_LEASE (same webhook-id: the receiver
   * may have got it).
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.sleeper.stop();
    await this.loop;
    const deadline = setTimeout(() => this.abandon.abort(), this.settings.stopTimeoutMs);
    // Deliveries still in flight finish and join a flush; flush what is left at once.
    while (this.inFlight.size > 0 || this.unrecorded.length > 0 || this.flushes.size > 0) {
      this.flush();
      await Promise.race([Promise.allSettled([...this.inFlight]), ...this.flushes]);
      await Promise.allSettled([...this.flushes]);
    }
    clearTimeout(deadline);
    this.http.close();
  }

  /** False while the database does not answer the claims (the dispatcher keeps retrying every poll interval). */
  get databaseReachable(): boolean {
    return !this.database.down;
  }

  stats(): DispatcherStats {
    return { ...this.counters, inFlight: this.inFlight.size, unrecorded: this.unrecorded.length };
  }

  private async run(): Promise<void> {
    let lastClaimAt = -Infinity;
    while (this.running) {
      const gap = lastClaimAt + this.settings.minClaimIntervalMs - performance.now();
      if (gap > 0 && !this.moreDue) await this.sleeper.sleep(gap, { wakeable: false });
      if (!this.running) break;
      const free = this.settings.concurrency - this.inFlight.size - this.reserved;
      let claimed = 0;
      if (free > 0) {
        // This claim serves every wake-up so far, and records what finished so far.
        this.sleeper.clearWake();
        lastClaimAt = performance.now();
        const records = this.takeUnrecorded();
        try {
          const rows = await this.claim(free, records);
          this.database.ok();
          records.forEach((f) => f.done(true));
          claimed = rows.length;
          if (this.running) for (const row of rows) this.track(this.deliver(row));
          else await this.release(rows); // stop() came while claiming: never sent, give them back
        } catch (e) {
          this.database.failed(e, { step: 'claim' });
          this.recordFailed(records, e);
        }
      }
      // Full claim: more may be due. No free slot: a wake-up was not served. Either way, claim
      // again as soon as a slot frees; otherwise only on wake() or the poll.
      this.moreDue = free <= 0 || (claimed > 0 && claimed === free);
      if (this.moreDue && free > 0 && this.inFlight.size + this.reserved < this.settings.concurrency) continue;
      // Ends early on wake(), including one that came since the claim; consumes it.
      await this.sleeper.sleep(this.settings.pollIntervalMs);
    }
  }

  private track(delivery: Promise<void>): void {
    // A delivery never rejects (deliver() logs its own failures), so this chain cannot leave an
    // unhandled rejection behind.
    const p = delivery.catch((err) => this.opts.logger?.error({ err }, 'webhook delivery failed unexpectedly'));
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      if (this.moreDue) {
        this.moreDue = false;
        this.wake();
      }
    });
  }

  private scheduleWake(delayMs: number): void {
    if (!this.running) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.wake();
    }, delayMs);
    t.unref();
    this.timers.add(t);
  }

  private async release(rows: ClaimedNotification[]): Promise<void> {
    const released = await this.repo
      .release(rows.map((r) => ({ id: r.id, leaseToken: r.lease_token })))
      .catch(
        (err) =>
          this.opts.logger?.warn(
            { err, notifications: rows.length },
            'could not release the leases of unsent notifications; they expire',
          ) ?? 0,
      );
    if (released) this.opts.logger?.info({ released }, 'released the leases of claimed, unsent notifications');
  }

  /** Claims up to `limit` due notifications of this group, recording `records` in the same statement. */
  private claim(limit: number, records: Finished[]): Promise<ClaimedNotification[]> {
    return this.repo.claim(
      this.opts.groupId,
      limit,
      this.settings.leaseMs,
      records.map(toRecord),
      this.opts.defaultUrl,
    );
  }

  private async deliver(row: ClaimedNotification): Promise<void> {
    const { secret, problem } = this.signingSecret(row);
    let result: AttemptResult;
    let outcome: AttemptOutcome;
    if (!row.target_url || !secret) {
      const error = !row.target_url
        ? 'no webhook target now: the tenant has no webhook_url and NOTIFY_WEBHOOK_URL is not set'
        : 'no signing secret configured (tenant webhook_secret or NOTIFY_WEBHOOK_SECRET)';
      result = { statusCode: null, error, durationMs: 0 };
      outcome = { status: 'dead', error };
    } else {
      // A secret that does not decrypt (a key missing from this process's WEBHOOK_SECRET_KEYS) is
      // retried like an unreachable receiver: fixing the configuration lets the next attempt through.
      result = problem
        ? { statusCode: null, error: problem, durationMs: 0 }
        : await postWebhook(this.http, row.target_url, row, secret, this.settings.timeoutMs, this.abandon.signal);
      outcome =
        result.error === ABANDONED
          ? { status: 'pending', delayMs: 0, error: ABANDONED } // stopping: due again at once, for another dispatcher
          : decideAttempt(row.attempts, result, {
              maxAttempts: this.settings.maxAttempts,
              baseMs: this.settings.retryBaseMs,
              maxDelayMs: this.settings.retryMaxDelayMs,
            });
    }
    const recorded = await new Promise<boolean>((done) => this.enqueueRecord({ row, result, outcome, done }));
    if (!recorded) return;
    if (outcome.status === 'delivered') {
      this.counters.delivered++;
      this.metrics?.delivery('delivered', result.durationMs);
    } else if (outcome.status === 'dead') {
      this.counters.dead++;
      this.metrics?.delivery('dead', result.durationMs);
      this.opts.logger?.warn(
        { notificationId: row.id, attempts: row.attempts, error: outcome.error },
        'webhook notification is dead',
      );
    } else {
      this.counters.retried++;
      // An attempt abandoned by stop() is no outcome of the receiver's: not measured.
      if (result.error !== ABANDONED) this.metrics?.delivery('retry', result.durationMs);
      this.scheduleWake(outcome.delayMs);
    }
  }

  /** The tenant's current secret (decrypted) for a tenant or override target, else NOTIFY_WEBHOOK_SECRET. */
  private signingSecret(row: ClaimedNotification): { secret?: string; problem?: string } {
    if (row.target_source === 'default' || !row.tenant_secret) return { secret: this.opts.defaultSecret };
    try {
      return { secret: this.cipher.decrypt(row.tenant_secret, row.tenant_id) };
    } catch (e) {
      return { secret: row.tenant_secret, problem: (e as Error).message };
    }
  }

  private enqueueRecord(f: Finished): void {
    this.unrecorded.push(f);
    if (this.unrecorded.length >= this.settings.recordBatchSize || !this.running) this.flush();
    else if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), this.settings.recordFlushMs);
  }

  private takeUnrecorded(): Finished[] {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.unrecorded;
    this.unrecorded = [];
    return batch;
  }

  private recordFailed(batch: Finished[], e: unknown): void {
    if (batch.length === 0) return;
    // The leases expire and these notifications are sent again (same webhook-id): at-least-once.
    this.database.failed(e, { step: 'record', notificationIds: batch.map((f) => f.row.id) });
    batch.forEach((f) => f.done(false));
  }

  /** Starts recording everything finished so far, in one statement. */
  private flush(): void {
    const batch = this.takeUnrecorded();
    if (batch.length === 0) return;
    const p = this.repo.record(batch.map(toRecord)).then(
      () => {
        this.database.ok();
        batch.forEach((f) => f.done(true));
      },
      (e) => this.recordFailed(batch, e),
    );
    this.flushes.add(p);
    void p.finally(() => this.flushes.delete(p));
  }
}

function toRecord({ row, result, outcome }: Finished): AttemptRecord {
  return {
    id: row.id,
    leaseToken: row.lease_token,
    status: outcome.status,
    delayMs: outcome.status === 'pending' ? outcome.delayMs : 0,
    lastError: outcome.status === 'delivered' ? null : outcome.error,
    attemptNo: row.attempts,
    statusCode: result.statusCode,
    error: result.error,
    durationMs: result.durationMs,
  };
}
