import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
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
  payload: unknown;
  tenant_secret: string | null;
  lease_token: string;
}

interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  retryAfterMs?: number;
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
 * Transactions: each claim and each result is its own short statement; never run inside a caller's
 * transaction, and no HTTP request is made while a database transaction is open.
 */
export class WebhookDispatcher {
  private running = false;
  private loop?: Promise<void>;
  private wakeRequested = false;
  private wakeSleeper?: () => void;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly counters = { delivered: 0, retried: 0, dead: 0 };

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
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  stats(): DispatcherStats {
    return { ...this.counters, inFlight: this.inFlight.size };
  }

  private async run(): Promise<void> {
    while (this.running) {
      const free = this.opts.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const rows = await this.claim(free);
          claimed = rows.length;
          for (const row of rows) this.track(this.deliver(row));
        } catch (e) {
          this.opts.logger?.warn({ err: e }, 'notification claim failed; retrying after the poll interval');
        }
      }
      if (claimed > 0 && claimed === free) continue;
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
      this.wake();
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

  /** Claims up to `limit` due notifications of this group; each claim counts as one attempt. */
  private async claim(limit: number): Promise<ClaimedRow[]> {
    const token = randomUUID();
    const rows = await this.opts.prisma.$queryRaw<ClaimedRow[]>(Prisma.sql`
      WITH due AS (
        SELECT id FROM notifications
        WHERE group_id = ${this.opts.groupId} AND status = 'pending' AND next_attempt_at <= now()
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
    try {
      await this.record(row, result, outcome);
    } catch (e) {
      // The lease expires and the notification is sent again (same webhook-id): at-least-once.
      this.opts.logger?.error({ err: e, notificationId: row.id }, 'could not record a webhook attempt');
      return;
    }
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
    const payload = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
    const body = JSON.stringify({ type: row.event_type, timestamp: (payload as { occurredAt?: string }).occurredAt, data: payload });
    const started = performance.now();
    try {
      const res = await fetch(row.target_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'tickets-notifier/1', ...webhookHeaders(secret, row.id, body) },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      await res.body?.cancel().catch(() => undefined);
      return {
        statusCode: res.status,
        error: res.ok ? null : `HTTP ${res.status}`,
        durationMs: Math.round(performance.now() - started),
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
      };
    } catch (e) {
      const err = e as Error & { cause?: { code?: string; message?: string } };
      const error =
        err.name === 'TimeoutError' || err.name === 'AbortError'
          ? `timeout after ${this.opts.timeoutMs} ms`
          : `network error: ${err.cause?.code ?? err.cause?.message ?? err.message}`;
      return { statusCode: null, error, durationMs: Math.round(performance.now() - started) };
    }
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

  /** Records the attempt (always: it happened) and the new state (only while this dispatcher holds the lease). */
  private async record(row: ClaimedRow, r: AttemptResult, o: Outcome): Promise<void> {
    const delayMs = o.status === 'pending' ? o.delayMs : 0;
    const error = o.status === 'delivered' ? null : o.error;
    await this.opts.prisma.$executeRaw(Prisma.sql`
      WITH upd AS (
        UPDATE notifications
        SET status = ${o.status},
            delivered_at = CASE WHEN ${o.status} = 'delivered' THEN now() END,
            next_attempt_at = CASE WHEN ${o.status} = 'pending' THEN now() + ${delayMs}::int * interval '1 millisecond' END,
            last_error = ${error},
            lease_token = NULL
        WHERE id = ${row.id}::uuid AND lease_token = ${row.lease_token}::uuid
        RETURNING id
      )
      INSERT INTO notification_attempts (notification_id, attempt_no, status_code, error, duration_ms)
      VALUES (${row.id}::uuid, ${row.attempts}, ${r.statusCode}::int, ${r.error}, ${r.durationMs})
      ON CONFLICT (notification_id, attempt_no) DO NOTHING`);
  }
}
