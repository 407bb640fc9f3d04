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
  | 'notification-pending';

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
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.created.v1')`,
  'cancelled-without-cancelled-event': ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.status = 'cancelled' AND t.cancelled_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.aggregate_id = t.id AND d.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.cancelled.v1')`,
  'key-without-ticket': ({ tenant }) => Prisma.sql`
      SELECT k.tenant_id::text || '/' || k.key AS id FROM idempotency_keys k
      WHERE NOT EXISTS (SELECT 1 FROM tickets t WHERE t.id = k.ticket_id) ${tenantFilter('k.tenant_id', tenant)}`,
  'ticket-without-key': ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.created_at >= ${since}::timestamptz AND t.idempotency_key IS NOT NULL ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = t.tenant_id AND k.key = t.idempotency_key)`,
  'outbox-unpublished': ({ grace, tenant }) => Prisma.sql`
      SELECT o.event_id::text AS id FROM outbox_events o
      WHERE o.published_at IS NULL AND o.created_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}`,
  'outbox-dead-lettered': ({ since, tenant }) => Prisma.sql`
      SELECT d.event_id::text AS id FROM outbox_dead_letters d WHERE d.created_at >= ${since}::timestamptz ${tenantFilter('d.tenant_id', tenant)}`,
  'event-not-consumed': ({ grace, group, tenant }) => Prisma.sql`
      SELECT o.event_id::text AS id FROM outbox_events o
      WHERE o.published_at IS NOT NULL AND o.published_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.group_id = ${group} AND i.event_id = o.event_id)
        AND NOT EXISTS (SELECT 1 FROM consumer_dead_letters c WHERE c.group_id = ${group} AND c.key = o.aggregate_id::text)`,
  'consumed-without-notification': ({ since, group, tenant }) => Prisma.sql`
      SELECT i.event_id::text AS id FROM inbox_events i
      WHERE i.group_id = ${group} AND i.received_at >= ${since}::timestamptz
        AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = i.event_id AND n.group_id = i.group_id)
        ${tenant ? Prisma.sql`AND i.ticket_id IN (SELECT id FROM tickets WHERE tenant_id = (SELECT id FROM tenants WHERE slug = ${tenant}))` : Prisma.empty}`,
  'notification-dead': ({ since, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'dead' AND n.created_at >= ${since}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
  'notification-pending': ({ grace, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'pending' AND n.created_at < ${grace}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
};

/** Reads only: tickets, idempotency_keys, outbox_events, outbox_dead_letters, inbox_events, consumer_dead_letters, notifications. */
export class ReconcileRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The offending ids of one check, at most `limit` (own statement, no transaction across checks). */
  async offenders(check: CheckId, params: CheckParams, limit: number): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<Array<{ id: string }>>(Prisma.sql`SELECT id FROM (${QUERIES[check](params)}) AS x LIMIT ${limit}::int`);
    return rows.map((r) => r.id);
  }
}
