import { Prisma, type PrismaClient } from '@tickets/db';
import type { AuditEntry, DeadLetterFilter, DeadLetterItem, DeadLetterKind } from './dead-letter.types';

const UUID_RE = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** The SQL expressions a filter is applied to, per source. */
interface Columns {
  /** A uuid column (compared as uuid, so its index serves), or text; null: the id is filtered elsewhere. */
  id: { col: string; uuid: boolean } | null;
  tenantSlug: string;
  ticket: string;
  reason: string;
  time: string;
}

function where(f: DeadLetterFilter, c: Columns, extra: Prisma.Sql[]): Prisma.Sql {
  const parts = [...extra];
  if (f.id && c.id)
    parts.push(
      c.id.uuid ? Prisma.sql`${Prisma.raw(c.id.col)} = ${f.id}::uuid` : Prisma.sql`${Prisma.raw(c.id.col)} = ${f.id}`,
    );
  if (f.tenant) parts.push(Prisma.sql`${Prisma.raw(c.tenantSlug)} = ${f.tenant}`);
  if (f.ticket) parts.push(Prisma.sql`${Prisma.raw(c.ticket)} = ${f.ticket}`);
  if (f.reason) parts.push(Prisma.sql`strpos(lower(${Prisma.raw(c.reason)}), lower(${f.reason})) > 0`);
  if (f.since) parts.push(Prisma.sql`${Prisma.raw(c.time)} >= ${f.since}::timestamptz`);
  if (f.until) parts.push(Prisma.sql`${Prisma.raw(c.time)} < ${f.until}::timestamptz`);
  return parts.length ? Prisma.sql`WHERE ${Prisma.join(parts, ' AND ')}` : Prisma.empty;
}

const page = (f: DeadLetterFilter) => Prisma.sql`ORDER BY "deadAt" DESC LIMIT ${f.limit}::int`;

/** Dead outbox rows, and with `all` the ones an operator requeued or discarded (their last action, from the audit snapshot). */
function outboxQuery(f: DeadLetterFilter): Prisma.Sql {
  const dead = Prisma.sql`
    SELECT 'outbox' AS kind, d.event_id::text AS id, 'dead' AS state, t.slug AS tenant, d.aggregate_id::text AS "ticketId",
           d.event_id::text AS "eventId", d.event_type AS "eventType", d.reason, d.attempts, d.created_at AS "deadAt",
           'outbox seq ' || d.seq AS "where"
      FROM outbox_dead_letters d LEFT JOIN tenants t ON t.id = d.tenant_id
      ${where(f, { id: { col: 'd.event_id', uuid: true }, tenantSlug: 't.slug', ticket: 'd.aggregate_id::text', reason: 'd.reason', time: 'd.created_at' }, [])}`;
  if (!f.all) return Prisma.sql`${dead} ${page(f)}`;
  const acted = Prisma.sql`
    SELECT * FROM (
      SELECT DISTINCT ON (a.target_id) 'outbox' AS kind, a.target_id AS id,
             CASE a.action WHEN 'discard' THEN 'discarded' ELSE 'requeued' END AS state, t.slug AS tenant,
             a.ticket_id::text AS "ticketId", a.event_id::text AS "eventId", a.snapshot->>'event_type' AS "eventType",
             a.dead_reason AS reason, (a.snapshot->>'attempts')::int AS attempts,
             (a.snapshot->>'created_at')::timestamptz AS "deadAt", 'outbox seq ' || (a.snapshot->>'seq') AS "where"
        FROM dead_letter_actions a LEFT JOIN tenants t ON t.id = a.tenant_id
       WHERE a.kind = 'outbox' AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.event_id = a.event_id)
       ORDER BY a.target_id, a.created_at DESC) x
      ${where(f, { id: { col: 'x.id', uuid: false }, tenantSlug: 'x.tenant', ticket: 'x."ticketId"', reason: 'x.reason', time: 'x."deadAt"' }, [])}`;
  return Prisma.sql`${dead} UNION ALL ${acted} ${page(f)}`;
}

function notificationQuery(f: DeadLetterFilter): Prisma.Sql {
  const statuses = f.all ? ['dead', 'discarded'] : ['dead'];
  return Prisma.sql`
    SELECT * FROM (
      SELECT 'notification' AS kind, n.id::text AS id, n.status AS state, t.slug AS tenant, n.ticket_id::text AS "ticketId",
             n.event_id::text AS "eventId", n.event_type AS "eventType", COALESCE(n.last_error, '') AS reason, n.attempts,
             COALESCE((SELECT max(a.created_at) FROM notification_attempts a WHERE a.notification_id = n.id), n.created_at) AS "deadAt",
             'group ' || n.group_id || ' -> ' || COALESCE(n.target_url, '(no target)') AS "where"
        FROM notifications n LEFT JOIN tenants t ON t.id = n.tenant_id
       WHERE n.status = ANY(${statuses}::text[]) ${f.id ? Prisma.sql`AND n.id = ${f.id}::uuid` : Prisma.empty}
             ${f.group ? Prisma.sql`AND n.group_id = ${f.group}` : Prisma.empty}) x
      ${where(f, { id: null, tenantSlug: 'x.tenant', ticket: 'x."ticketId"', reason: 'x.reason', time: 'x."deadAt"' }, [])}
      ${page(f)}`;
}

/** The kinds read here; consumer dead letters are the kit's (ConsumerDeadLetters of @tickets/event-consumer). */
export type ServiceDeadLetterKind = Exclude<DeadLetterKind, 'consumer'>;

const QUERIES: Record<ServiceDeadLetterKind, (f: DeadLetterFilter) => Prisma.Sql> = {
  outbox: outboxQuery,
  notification: notificationQuery,
};

/**
 * Reads the service's dead letters (outbox_dead_letters, notifications with status dead) and
 * dead_letter_actions, and the tenant of the kit's consumer dead letters (ticket_events schema).
 * Each read is its own statement; nothing here writes.
 */
export class DeadLettersRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Up to `limit` of one kind matching the filter, newest first. */
  async list(kind: ServiceDeadLetterKind, f: DeadLetterFilter): Promise<DeadLetterItem[]> {
    if (kind === 'outbox' && f.group) return []; // no outbox dead letter belongs to a group
    return this.prisma.$queryRaw<DeadLetterItem[]>(QUERIES[kind](f));
  }

  /** What a dead letter holds: the event text and headers, or the consumer's stored message. */
  async content(kind: ServiceDeadLetterKind, id: string): Promise<Record<string, unknown>> {
    if (kind === 'outbox') {
      const rows = await this.prisma.$queryRaw<Array<{ payload: string; headers: unknown }>>(Prisma.sql`
        SELECT payload::text AS payload, headers FROM outbox_dead_letters WHERE event_id::text = ${id}
        UNION ALL
        SELECT * FROM (SELECT (a.snapshot->'payload')::text, a.snapshot->'headers' FROM dead_letter_actions a
                        WHERE a.kind = 'outbox' AND a.target_id = ${id} ORDER BY a.created_at DESC LIMIT 1) s
        LIMIT 1`);
      return rows[0] ? { payload: rows[0].payload, headers: rows[0].headers } : {};
    }
    const rows = await this.prisma.$queryRaw<Array<Record<string, unknown>>>(Prisma.sql`
      SELECT payload, target_source AS "targetSource", status FROM notifications WHERE id::text = ${id}`);
    return rows[0] ?? {};
  }

  /** A notification's HTTP attempts, oldest first. */
  async attempts(
    notificationId: string,
  ): Promise<Array<{ attemptNo: number; statusCode: number | null; error: string | null; at: Date }>> {
    return this.prisma.$queryRaw(Prisma.sql`
      SELECT attempt_no AS "attemptNo", status_code AS "statusCode", error, created_at AS at
        FROM notification_attempts WHERE notification_id::text = ${notificationId} ORDER BY attempt_no`);
  }

  /** The keys (ticket ids) of the kit's consumer dead letters whose ticket belongs to this tenant. */
  async consumerTicketsOfTenant(tenantSlug: string): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<Array<{ key: string }>>(Prisma.sql`
      SELECT DISTINCT c.key FROM ticket_events.consumer_dead_letters c
        JOIN tickets tk ON tk.id::text = c.key JOIN tenants t ON t.id = tk.tenant_id
       WHERE t.slug = ${tenantSlug} AND c.key ~* ${UUID_RE}`);
    return rows.map((r) => r.key);
  }

  /** Ticket id → tenant slug, for the tickets named. */
  async tenantsOfTickets(ticketIds: string[]): Promise<Map<string, string>> {
    if (ticketIds.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<Array<{ id: string; slug: string }>>(Prisma.sql`
      SELECT tk.id::text AS id, t.slug FROM tickets tk JOIN tenants t ON t.id = tk.tenant_id WHERE tk.id = ANY(${ticketIds}::uuid[])`);
    return new Map(rows.map((r) => [r.id, r.slug]));
  }

  /** Every requeue and discard of one dead letter, oldest first. */
  async history(kind: DeadLetterKind, id: string): Promise<AuditEntry[]> {
    return this.prisma.$queryRaw<AuditEntry[]>(Prisma.sql`
      SELECT action, actor, note, detail, created_at AS at FROM dead_letter_actions
       WHERE kind = ${kind} AND target_id = ${id} ORDER BY created_at, id`);
  }
}
