import { Prisma, type PrismaClient } from '@tickets/db';

export type CheckId =
  | 'ticket-without-created-event'
  | 'cancelled-without-cancelled-event'
  | 'key-without-ticket'
  | 'ticket-without-key'
  | 'outbox-unpublished'
  | 'outbox-dead-lettered'
  | 'event-not-consumed'
  | 'consumed-without-notification'
  | 'notification-dead'
  | 'notification-pending'
  | 'duplicate-ticket';

export interface CheckParams {
  since: Date;
  grace: Date;
  group: string;
  tenant: string | null;
}

const tenantFilter = (col: string, tenant: string | null) =>
  tenant ? Prisma.sql`AND ${Prisma.raw(col)} = (SELECT id FROM tenants WHERE slug = ${tenant})` : Prisma.empty;

/** One query per check, each selecting the `id` of every offending row (compile-checked: one per CheckId). */
const QUERIES: Record<CheckId, (p: CheckParams) => Prisma.Sql> = {
  'ticket-without-created-event': ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.created_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.created.v1')
        AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.aggregate_id = t.id AND d.event_type = 'ticket.created.v1')
        AND NOT EXISTS (SELECT 1 FROM ticket_events.inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.created.v1')`,
  'cancelled-without-cancelled-event': ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.status = 'cancelled' AND t.cancelled_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.aggregate_id = t.id AND d.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM ticket_events.inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.cancelled.v1')`,
  'key-without-ticket': ({ tenant }) => Prisma.sql`
      SELECT k.tenant_id::text || '/' || k.key AS id FROM idempotency_keys k
      WHERE NOT EXISTS (SELECT 1 FROM tickets t WHERE t.id = k.ticket_id) ${tenantFilter('k.tenant_id', tenant)}`,
  'ticket-without-key': ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.created_at >= ${since}::timestamptz AND t.idempotency_key IS NOT NULL ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = t.tenant_id AND k.key = t.idempotency_key)`,
  'outbox-unpublished': ({ grace, tenant }) => Prisma.sql`
      SELECT o.event_id::text AS id FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq
      WHERE o.created_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}`,
  'outbox-dead-lettered': ({ since, tenant }) => Prisma.sql`
      SELECT d.event_id::text AS id FROM outbox_dead_letters d WHERE d.created_at >= ${since}::timestamptz ${tenantFilter('d.tenant_id', tenant)}`,
  'event-not-consumed': ({ grace, group, tenant }) => Prisma.sql`
      SELECT DISTINCT o.event_id::text AS id
        FROM outbox_publications p CROSS JOIN LATERAL unnest(p.seqs) AS s(seq) JOIN outbox_events o ON o.seq = s.seq
      WHERE p.published_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM ticket_events.inbox_events i WHERE i.group_id = ${group} AND i.event_id = o.event_id)
        AND NOT EXISTS (SELECT 1 FROM ticket_events.consumer_dead_letters c WHERE c.group_id = ${group} AND c.key = o.aggregate_id::text)`,
  'consumed-without-notification': ({ since, group, tenant }) => Prisma.sql`
      SELECT i.event_id::text AS id FROM ticket_events.inbox_events i
      WHERE i.group_id = ${group} AND i.received_at >= ${since}::timestamptz
        AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = i.event_id AND n.group_id = i.group_id)
        ${tenant ? Prisma.sql`AND i.ticket_id IN (SELECT id FROM tickets WHERE tenant_id = (SELECT id FROM tenants WHERE slug = ${tenant}))` : Prisma.empty}`,
  'notification-dead': ({ since, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'dead' AND n.created_at >= ${since}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
  'notification-pending': ({ grace, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'pending' AND n.created_at < ${grace}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
  // A ticket with an earlier one of the same tenant and externalRef, or of the same intent (its
  // Idempotency-Key: the agent client derives it from the intent id). "Earlier": (created_at, id) below
  // its own, inside the window or not. Each rule is a semi-join of the window's tickets against all
  // tickets, which PostgreSQL runs as a hash join that spills to disk in batches when it outgrows
  // work_mem: linear in the tickets. (Ranking every ticket sharing a key with the window, with
  // `IN (SELECT ... FROM recent)` under an OR, fell back to a per-row scan of the window once the window
  // outgrew work_mem: over 600 s at 876,211 tickets against 1.7-1.8 s this way, docs/benchmarks.md.)
  'duplicate-ticket': ({ since, tenant }) => Prisma.sql`
      WITH recent AS (
        SELECT t.id, t.tenant_id, t.external_ref, t.idempotency_key, t.created_at FROM tickets t
        WHERE t.created_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
      )
      SELECT r.id::text AS id FROM recent r
      WHERE r.external_ref IS NOT NULL AND EXISTS (
        SELECT 1 FROM tickets e
        WHERE e.tenant_id = r.tenant_id AND e.external_ref = r.external_ref AND (e.created_at, e.id) < (r.created_at, r.id))
      UNION
      SELECT r.id::text FROM recent r
      WHERE r.idempotency_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM tickets e
        WHERE e.tenant_id = r.tenant_id AND e.idempotency_key = r.idempotency_key AND (e.created_at, e.id) < (r.created_at, r.id))`,
};

/** One check's statement: the `id` of at most `limit` offending rows. */
export function checkStatement(check: CheckId, params: CheckParams, limit: number): Prisma.Sql {
  return Prisma.sql`SELECT id FROM (${QUERIES[check](params)}) AS x LIMIT ${limit}::int`;
}

/**
 * Prisma's limits for a batch transaction, which otherwise rolls it back after 5 s and gives up waiting for a
 * connection after 2 s. A check over a large window may take longer than that (7.0-7.6 s for the whole run
 * at 876,211 tickets, one check 17 s with sequential scans off); it is read-only and holds no lock but its
 * snapshot, so it may run as long as it needs. A failed run is not recorded; the schedule tries again with
 * a backoff (ReconcileSchedule.runIfDue).
 */
const SWEEP_TRANSACTION = { maxWait: 60_000, timeout: 3_600_000 };

/**
 * One statement of the sweep, in a read-only transaction of its own with sequential scans allowed.
 *
 * The checks read whole windows of tickets, keys, events and notifications, joined against each other:
 * their right plans are sequential scans and hash joins. The API runs the scheduled reconciliation over
 * its own pool, whose sessions turn sequential scans off (FIXED_PLANS_OPTION, for the hot paths' key
 * lookups), which forced the checks into nested loops of index lookups: at 876,211 tickets the first seven
 * checks took 37 s that way against 6 s with sequential scans allowed (docs/benchmarks.md, "The scheduled
 * reconciliation beside live traffic"). `SET LOCAL` ends with the transaction, so the pool's connection goes
 * back as it came.
 */
export async function sweepQuery<T>(prisma: PrismaClient, sql: Prisma.Sql): Promise<T[]> {
  const [, , rows] = await prisma.$transaction(
    [
      prisma.$executeRaw`SET TRANSACTION READ ONLY`,
      prisma.$executeRaw`SET LOCAL enable_seqscan = on`,
      prisma.$queryRaw<T[]>(sql),
    ],
    SWEEP_TRANSACTION,
  );
  return rows;
}

/** Reads only: tickets, idempotency_keys, outbox_events, outbox_dead_letters, ticket_events.inbox_events, ticket_events.consumer_dead_letters, notifications. */
export class ReconcileRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The offending ids of one check, at most `limit` (own statement and transaction: none across checks). */
  async offenders(check: CheckId, params: CheckParams, limit: number): Promise<string[]> {
    const rows = await sweepQuery<{ id: string }>(this.prisma, checkStatement(check, params, limit));
    return rows.map((r) => r.id);
  }

  /** Tickets created inside the window (the denominator of the duplicate-creation rate). */
  async ticketsSince({ since, tenant }: Pick<CheckParams, 'since' | 'tenant'>): Promise<number> {
    const rows = await sweepQuery<{ n: bigint }>(
      this.prisma,
      Prisma.sql`
      SELECT count(*) AS n FROM tickets t WHERE t.created_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}`,
    );
    return Number(rows[0]?.n ?? 0);
  }
}
