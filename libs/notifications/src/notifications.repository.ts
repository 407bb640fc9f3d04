import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from '@tickets/db';

/** A notification claimed for one delivery attempt (its lease is `lease_token`). */
export interface ClaimedNotification {
  id: string;
  event_type: string;
  /** The target at this claim (see claim()); null: none any more (the tenant's cleared, no NOTIFY_WEBHOOK_URL). */
  target_url: string | null;
  target_source: string | null;
  tenant_id: string;
  /** Attempts including this one: every claim counts one. */
  attempts: number;
  /** notifications.payload: the event text as read from Kafka. */
  payload: string;
  /** The trace the webhook request is sent in (the consumer's span for the event); null for older rows. */
  traceparent: string | null;
  /** tenants.webhook_secret as stored (encrypted, or a plaintext row from before encryption). */
  tenant_secret: string | null;
  lease_token: string;
}

/**
 * NOTIFY_WEBHOOK_URL as the dispatcher's process has it: a string or null (not set). Undefined: not
 * told, so a notification without a tenant target keeps the URL it was created with.
 */
export type DefaultTarget = string | null | undefined;

/** One finished delivery attempt and the notification's new state. */
export interface AttemptRecord {
  id: string;
  leaseToken: string;
  status: 'delivered' | 'pending' | 'dead';
  /** For `pending`: the next attempt is due this long from now. */
  delayMs: number;
  lastError: string | null;
  attemptNo: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * The webhook dispatcher's SQL on notifications / notification_attempts (tenants read for the
 * secret). Each method is one statement, atomic on its own; never run inside a caller's transaction.
 */
export class NotificationsRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Claims up to `limit` due notifications of `groupId` with FOR UPDATE SKIP LOCKED and leases them
   * (next_attempt_at = now + lease, a new lease_token, attempts + 1), and points each at its tenant's
   * current target: the tenant's webhook_url, else `defaultUrl` (an 'override' from requeue --url is
   * kept). Records `records` (see record()) in the same statement; those rows are never claimed by it.
   */
  async claim(
    groupId: string,
    limit: number,
    leaseMs: number,
    records: AttemptRecord[] = [],
    defaultUrl?: DefaultTarget,
  ): Promise<ClaimedNotification[]> {
    const token = randomUUID();
    const rec = records.length > 0 ? recordCtes(records) : undefined;
    const told = defaultUrl !== undefined;
    return this.prisma.$queryRaw<ClaimedNotification[]>(Prisma.sql`
      WITH ${rec ? Prisma.sql`${rec.ctes},` : Prisma.empty} due AS (
        SELECT n.id, t.webhook_url, t.webhook_secret FROM notifications n LEFT JOIN tenants t ON t.id = n.tenant_id
        WHERE n.group_id = ${groupId} AND n.status = 'pending' AND n.next_attempt_at <= now()
          ${rec ? Prisma.sql`AND n.id <> ALL (${rec.ids}::uuid[])` : Prisma.empty}
        ORDER BY n.next_attempt_at
        LIMIT ${limit}
        FOR UPDATE OF n SKIP LOCKED
      )
      UPDATE notifications n
      SET next_attempt_at = now() + ${leaseMs}::int * interval '1 millisecond',
          lease_token = ${token}::uuid,
          attempts = n.attempts + 1,
          target_url = CASE WHEN n.target_source = 'override' THEN n.target_url
                            WHEN due.webhook_url IS NOT NULL THEN due.webhook_url
                            WHEN ${told}::boolean THEN ${defaultUrl ?? null}::text
                            ELSE n.target_url END,
          target_source = CASE WHEN n.target_source = 'override' THEN 'override'
                               WHEN due.webhook_url IS NOT NULL THEN 'tenant'
                               WHEN ${told}::boolean AND ${defaultUrl ?? null}::text IS NULL THEN NULL
                               ELSE 'default' END
      FROM due
      -- The ids as an array condition too: the primary key is probed for them whatever the join (a plan made
      -- while the table was empty put a walk of the whole primary key outside the join).
      WHERE n.id = ANY (ARRAY(SELECT id FROM due)) AND n.id = due.id
      RETURNING n.id, n.event_type, n.target_url, n.target_source, n.tenant_id::text AS tenant_id, n.attempts, n.payload,
                n.traceparent, n.lease_token::text AS lease_token, due.webhook_secret AS tenant_secret`);
  }

  /**
   * Records the attempts (always: they happened) and the new states (only for the rows whose lease
   * is still `leaseToken`), for several finished deliveries in one statement.
   */
  async record(records: AttemptRecord[]): Promise<void> {
    await this.prisma.$executeRaw(Prisma.sql`WITH ${recordCtes(records).ctes} SELECT 1`);
  }

  /** Runs alone: how many notifications of `groupId` are pending and dead (for the gauges; the status index answers it). */
  async countOpen(groupId: string): Promise<{ pending: number; dead: number }> {
    const rows = await this.prisma.$queryRaw<Array<{ pending: bigint; dead: bigint }>>(Prisma.sql`
      SELECT count(*) FILTER (WHERE status = 'pending') AS pending, count(*) FILTER (WHERE status = 'dead') AS dead
      FROM notifications WHERE group_id = ${groupId} AND status IN ('pending', 'dead')`);
    return { pending: Number(rows[0]?.pending ?? 0), dead: Number(rows[0]?.dead ?? 0) };
  }

  /**
   * Gives back leases of notifications claimed but never sent (a stopping dispatcher): due now, the
   * claim's attempt un-counted, so another dispatcher sends them at once instead of after the
   * lease. Only rows still under these tokens change. Returns how many did.
   */
  async release(leases: Array<{ id: string; leaseToken: string }>): Promise<number> {
    if (leases.length === 0) return 0;
    const ids = leases.map((l) => l.id);
    return this.prisma.$executeRaw(Prisma.sql`
      UPDATE notifications n
      SET next_attempt_at = now(), lease_token = NULL, attempts = n.attempts - 1
      FROM unnest(${ids}::uuid[], ${leases.map((l) => l.leaseToken)}::uuid[]) AS r(id, token)
      WHERE n.id = ANY (${ids}::uuid[]) AND n.id = r.id AND n.lease_token = r.token`);
  }
}

/**
 * The CTEs (rec, rec_upd, rec_ins) that record `records`: see NotificationsRepository.record(). Each is
 * idempotent (the update is fenced by the lease token, which it clears; the attempt insert skips an attempt
 * already there), and PostgreSQL runs a data-modifying CTE whether or not the statement reads it, so they
 * can lead any statement's WITH: the claim's, and the notifier's inbox statement (WebhookDispatcher.handOver).
 */
export function recordCtes(records: readonly AttemptRecord[]): { ids: string[]; ctes: Prisma.Sql } {
  const column = <K extends keyof AttemptRecord>(key: K) => records.map((r) => r[key]);
  const ids = column('id');
  const ctes = Prisma.sql`
      rec AS (
        SELECT * FROM unnest(${ids}::uuid[], ${column('leaseToken')}::uuid[], ${column('status')}::text[], ${column('delayMs')}::int[],
                             ${column('lastError')}::text[], ${column('attemptNo')}::int[], ${column('statusCode')}::int[],
                             ${column('error')}::text[], ${column('durationMs')}::int[])
                 AS rec(id, token, status, delay_ms, last_error, attempt_no, status_code, error, duration_ms)
      ), rec_upd AS (
        UPDATE notifications n
        SET status = rec.status,
            delivered_at = CASE WHEN rec.status = 'delivered' THEN now() END,
            next_attempt_at = CASE WHEN rec.status = 'pending' THEN now() + rec.delay_ms * interval '1 millisecond' END,
            last_error = rec.last_error,
            lease_token = NULL
        FROM rec
        -- The ids as an array condition too: the primary key is probed for them whatever the join (planned on a
        -- table of a few rows, the join by hash walked the whole primary key).
        WHERE n.id = ANY (ARRAY(SELECT id FROM rec)) AND n.id = rec.id AND n.lease_token = rec.token
        RETURNING n.id
      ), rec_ins AS (
        INSERT INTO notification_attempts (notification_id, attempt_no, status_code, error, duration_ms)
        SELECT id, attempt_no, status_code, error, duration_ms FROM rec
        ON CONFLICT (notification_id, attempt_no) DO NOTHING
        RETURNING 1
      )`;
  return { ids, ctes };
}
