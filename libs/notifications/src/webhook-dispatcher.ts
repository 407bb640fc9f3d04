import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import { HttpPoster } from './http-post';
import { classifyStatus, parseRetryAfter, retryDelayMs } from './retry-policy';
import { webhookHeaders } from './signature';

export interface DispatcherSettings {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  timeoutMs: number;
  /** Must exceed timeoutMs: a claimed notification is invisible to other dispatchers this long. */
  leaseMs: number;
  pollIntervalMs: number;
  concurrency: number;
  /**
   * Finished deliveries are recorded together: one statement per `recordBatchSize` results, or
   * `recordFlushMs` after the first unrecorded one, whichever comes first (defaults 16 and 5 ms).
   */
  recordBatchSize?: number;
  recordFlushMs?: number;
  /**
   * At least this long between two claims that follow wake-ups (default 5 ms), so that the
   * notifications of several inbox commits are claimed together. A claim that came back full is
   * followed as soon as a slot frees.
   */
  minClaimIntervalMs?: number;
}

export interface DispatcherOptions extends DispatcherSettings {
  prisma: PrismaClient;
  /** Only notifications created by this consumer group are sent by this dispatcher. */
  groupId: string;
  /** Signs deliveries to NOTIFY_WEBHOOK_URL, and to a tenant URL whose tenant has no secret of its own. */
  defaultSecret?: string;
  logger?: Logger;
}

export interface DispatcherStats {
  delivered: number;
  retried: number;
  dead: number;
  inFlight: number;
}

interface ClaimedRow {
  id: string;
  event_type: string;
  target_url: string;
  target_source: string | null;
  attempts: number;
  /** notifications.payload: the event text as read from Kafka. */
  payload: string;
  tenant_secret: string | null;
  lease_token: string;
}

interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  retryAfterMs?: number;
}

interface Finished {
  row: ClaimedRow;
  result: AttemptResult;
  outcome: Outcome;
  done: (recorded: boolean) => void;
}

type Outcome =
  | { status: 'delivered' }
  | { status: 'pending'; delayMs: number; error: string }
  | { status: 'dead'; error: string };

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
  private running = false;
  private loop?: Promise<void>;
  private wakeRequested = false;
  private wakeSleeper?: () => void;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly counters = { delivered: 0, retried: 0, dead: 0 };
  /** The last claim came back full or was skipped (no free slot): claim again when a slot frees. */
  private moreDue = false;
  private unrecorded: Finished[] = [];
  private flushTimer?: NodeJS.Timeout;
  private readonly flushes = new Set<Promise<void>>();
  private readonly http = new HttpPoster();
  private readonly stopWaiters = new Set<() => void>();

  constructor(private readonly opts: DispatcherOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Ask for an immediate claim round (called right after the inbox transaction commits). */
  wake(): void {
    this.wakeRequested = true;
    const sleeper = this.wakeSleeper;
    this.wakeSleeper = undefined;
    sleeper?.();
  }

  /** Stops claiming, then waits for the deliveries already in flight to finish and be recorded. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const w of [...this.stopWaiters]) w();
    this.wake();
    await this.loop;
    // Deliveries still in flight finish and join a flush; flush what is left at once.
    while (this.inFlight.size > 0 || this.unrecorded.length > 0 || this.flushes.size > 0) {
      this.flush();
      await Promise.race([Promise.allSettled([...this.inFlight]), ...this.flushes]);
      await Promise.allSettled([...this.flushes]);
    }
    this.http.close();
  }

  stats(): DispatcherStats {
    return { ...this.counters, inFlight: this.inFlight.size };
  }

  private async run(): Promise<void> {
    let lastClaimAt = -Infinity;
    while (this.running) {
      const gap = lastClaimAt + (this.opts.minClaimIntervalMs ?? 5) - performance.now();
      if (gap > 0 && !this.moreDue) await this.pause(gap);
      if (!this.running) break;
      const free = this.opts.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        // This claim serves every wake-up so far, and records what finished so far.
        this.wakeRequested = false;
        lastClaimAt = performance.now();
        const records = this.takeUnrecorded();
        try {
          const rows = await this.claim(free, records);
          records.forEach((f) => f.done(true));
          claimed = rows.length;
          for (const row of rows) this.track(this.deliver(row));
        } catch (e) {
          this.opts.logger?.warn({ err: e }, 'notification claim failed; retrying after the poll interval');
          this.recordFailed(records, e);
        }
      }
      // Full claim: more may be due. No free slot: a wake-up was not served. Either way, claim
      // again as soon as a slot frees; otherwise only on wake() or the poll.
      this.moreDue = free <= 0 || (claimed > 0 && claimed === free);
      if (this.moreDue && free > 0 && this.inFlight.size < this.opts.concurrency) continue;
      await this.sleep(this.opts.pollIntervalMs);
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

  /** Waits `ms` (less only when stopping). */
  private pause(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.timers.delete(t);
        this.stopWaiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.timers.add(t);
      this.stopWaiters.add(done);
    });
  }

  /** Waits `ms`, or less if wake() is called; a wake() that came while not sleeping skips the wait. */
  private sleep(ms: number): Promise<void> {
    if (this.wakeRequested || !this.running) {
      this.wakeRequested = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.wakeSleeper = undefined;
        this.wakeRequested = false;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.wakeSleeper = finish;
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

  /**
   * Claims up to `limit` due notifications of this group; each claim counts as one attempt. Records
   * `records` (see record()) in the same statement; those rows are never claimed by it.
   */
  private async claim(limit: number, records: Finished[] = []): Promise<ClaimedRow[]> {
    const token = randomUUID();
    const rec = records.length > 0 ? this.recordSql(records) : undefined;
    const rows = await this.opts.prisma.$queryRaw<ClaimedRow[]>(Prisma.sql`
      WITH ${rec ? Prisma.sql`${rec.ctes},` : Prisma.empty} due AS (
        SELECT id FROM notifications
        WHERE group_id = ${this.opts.groupId} AND status = 'pending' AND next_attempt_at <= now()
          ${rec ? Prisma.sql`AND id <> ALL (${rec.ids}::uuid[])` : Prisma.empty}
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE notifications n
      SET next_attempt_at = now() + ${this.opts.leaseMs}::int * interval '1 millisecond',
          lease_token = ${token}::uuid,
          attempts = n.attempts + 1
      FROM due
      WHERE n.id = due.id
      RETURNING n.id, n.event_type, n.target_url, n.target_source, n.attempts, n.payload, n.lease_token::text AS lease_token,
                (SELECT t.webhook_secret FROM tenants t WHERE t.id = n.tenant_id) AS tenant_secret`);
    return rows;
  }

  private async deliver(row: ClaimedRow): Promise<void> {
    const secret = (row.target_source === 'tenant' ? row.tenant_secret : null) ?? this.opts.defaultSecret;
    let result: AttemptResult;
    let outcome: Outcome;
    if (!secret) {
      result = { statusCode: null, error: 'no signing secret configured (tenant webhook_secret or NOTIFY_WEBHOOK_SECRET)', durationMs: 0 };
      outcome = { status: 'dead', error: result.error! };
    } else {
      result = await this.send(row, secret);
      outcome = this.decide(row, result);
    }
    const recorded = await new Promise<boolean>((done) => this.enqueueRecord({ row, result, outcome, done }));
    if (!recorded) return;
    if (outcome.status === 'delivered') this.counters.delivered++;
    else if (outcome.status === 'dead') {
      this.counters.dead++;
      this.opts.logger?.warn({ notificationId: row.id, attempts: row.attempts, error: outcome.error }, 'webhook notification is dead');
    } else {
      this.counters.retried++;
      this.scheduleWake(outcome.delayMs);
    }
  }

  private async send(row: ClaimedRow, secret: string): Promise<AttemptResult> {
    const payload = JSON.parse(row.payload) as { occurredAt?: string };
    const body = JSON.stringify({ type: row.event_type, timestamp: payload.occurredAt, data: payload });
    const started = performance.now();
    const res = await this.http.post(
      row.target_url,
      { 'content-type': 'application/json', 'user-agent': 'tickets-notifier/1', ...webhookHeaders(secret, row.id, body) },
      body,
      this.opts.timeoutMs,
    );
    const durationMs = Math.round(performance.now() - started);
    if (res.statusCode === null) return { statusCode: null, error: res.error ?? 'no response', durationMs };
    const retryAfter = res.headers['retry-after'];
    return {
      statusCode: res.statusCode,
      error: classifyStatus(res.statusCode) === 'delivered' ? null : `HTTP ${res.statusCode}`,
      durationMs,
      retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : (retryAfter ?? null)),
    };
  }

  private decide(row: ClaimedRow, r: AttemptResult): Outcome {
    const verdict = r.statusCode === null ? 'retry' : classifyStatus(r.statusCode);
    if (verdict === 'delivered') return { status: 'delivered' };
    if (verdict === 'dead') return { status: 'dead', error: `${r.error}: not retried (the receiver rejected the request)` };
    if (row.attempts >= this.opts.maxAttempts) return { status: 'dead', error: `${r.error}: gave up after ${row.attempts} attempts` };
    const backoff = retryDelayMs(row.attempts, { baseMs: this.opts.retryBaseMs, maxDelayMs: this.opts.retryMaxDelayMs });
    const delayMs = Math.min(this.opts.retryMaxDelayMs, Math.max(backoff, r.retryAfterMs ?? 0));
    return { status: 'pending', delayMs, error: r.error ?? 'unknown error' };
  }

  private enqueueRecord(f: Finished): void {
    this.unrecorded.push(f);
    if (this.unrecorded.length >= (this.opts.recordBatchSize ?? 16) || !this.running) this.flush();
    else if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), this.opts.recordFlushMs ?? 5);
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
    this.opts.logger?.error({ err: e, notificationIds: batch.map((f) => f.row.id) }, 'could not record webhook attempts');
    batch.forEach((f) => f.done(false));
  }

  /** Starts recording everything finished so far, in one statement. */
  private flush(): void {
    const batch = this.takeUnrecorded();
    if (batch.length === 0) return;
    const p = this.record(batch).then(
      () => batch.forEach((f) => f.done(true)),
      (e) => this.recordFailed(batch, e),
    );
    this.flushes.add(p);
    void p.finally(() => this.flushes.delete(p));
  }

  /** The CTEs (r, upd, ins) that record `batch`: see record(). */
  private recordSql(batch: Finished[]): { ids: string[]; ctes: Prisma.Sql } {
    const ids: string[] = [];
    const tokens: string[] = [];
    const statuses: string[] = [];
    const delays: number[] = [];
    const errors: (string | null)[] = [];
    const attemptNos: number[] = [];
    const codes: (number | null)[] = [];
    const attemptErrors: (string | null)[] = [];
    const durations: number[] = [];
    for (const { row, result: r, outcome: o } of batch) {
      ids.push(row.id);
      tokens.push(row.lease_token);
      statuses.push(o.status);
      delays.push(o.status === 'pending' ? o.delayMs : 0);
      errors.push(o.status === 'delivered' ? null : o.error);
      attemptNos.push(row.attempts);
      codes.push(r.statusCode);
      attemptErrors.push(r.error);
      durations.push(r.durationMs);
    }
    const ctes = Prisma.sql`
      r AS (
        SELECT * FROM unnest(${ids}::uuid[], ${tokens}::uuid[], ${statuses}::text[], ${delays}::int[], ${errors}::text[],
                             ${attemptNos}::int[], ${codes}::int[], ${attemptErrors}::text[], ${durations}::int[])
                 AS r(id, token, status, delay_ms, last_error, attempt_no, status_code, error, duration_ms)
      ), upd AS (
        UPDATE notifications n
        SET status = r.status,
            delivered_at = CASE WHEN r.status = 'delivered' THEN now() END,
            next_attempt_at = CASE WHEN r.status = 'pending' THEN now() + r.delay_ms * interval '1 millisecond' END,
            last_error = r.last_error,
            lease_token = NULL
        FROM r
        WHERE n.id = r.id AND n.lease_token = r.token
        RETURNING n.id
      ), ins AS (
        INSERT INTO notification_attempts (notification_id, attempt_no, status_code, error, duration_ms)
        SELECT id, attempt_no, status_code, error, duration_ms FROM r
        ON CONFLICT (notification_id, attempt_no) DO NOTHING
        RETURNING 1
      )`;
    return { ids, ctes };
  }

  /**
   * Records the attempts (always: they happened) and the new states (only for the rows whose lease
   * this dispatcher still holds), for several finished deliveries in one statement.
   */
  private async record(batch: Finished[]): Promise<void> {
    await this.opts.prisma.$executeRaw(Prisma.sql`WITH ${this.recordSql(batch).ctes} SELECT 1`);
  }
}
