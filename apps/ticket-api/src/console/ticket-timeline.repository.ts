import { Injectable } from '@nestjs/common';
import { Prisma } from '@tickets/db';
import { Database } from '../infra/database';

export interface TicketRow {
  id: string;
  tenant: string;
  title: string;
  status: string;
  priority: string;
  externalRef: string | null;
  idempotencyKey: string | null;
  createdAt: Date;
  cancelledAt: Date | null;
}

export interface KeyRow {
  key: string;
  operation: string;
  outcome: string;
  responseStatus: number;
  createdAt: Date;
  replayUntil: Date;
  expiresAt: Date;
}

/** An event of the ticket in outbox_events (`dead` false) or outbox_dead_letters (`dead` true). */
export interface OutboxRow {
  seq: string;
  eventId: string;
  eventType: string;
  createdAt: Date;
  publishedAt: Date | null;
  /** The Kafka record's timestamp the relay set (NULL for rows published before it was stored). */
  kafkaTimestamp: Date | null;
  /** Rejected sends of a row still in the relay's queue (0 once published); of a dead letter, all of them. */
  attempts: number;
  /** The last rejection of a queued row; a dead letter's reason. */
  lastError: string | null;
  traceparent: string | null;
  dead: boolean;
  deadAt: Date | null;
}

export interface InboxRow {
  groupId: string;
  eventId: string;
  eventType: string;
  topic: string;
  partition: number;
  offset: string;
  duplicates: number;
  receivedAt: Date;
}

export interface NotificationRow {
  id: string;
  groupId: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: number;
  targetUrl: string | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  attemptLog: Array<{
    attemptNo: number;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    at: string;
  }>;
}

export interface ActionRow {
  kind: string;
  action: string;
  targetId: string;
  actor: string;
  note: string | null;
  at: Date;
}

export interface TicketTimelineRows {
  ticket: TicketRow;
  keys: KeyRow[];
  outbox: OutboxRow[];
  inbox: InboxRow[];
  notifications: NotificationRow[];
  actions: ActionRow[];
}

const TICKET_COLUMNS = Prisma.sql`t.id::text, tn.slug AS tenant, t.title, t.status, t.priority, t.external_ref AS "externalRef",
             t.idempotency_key AS "idempotencyKey", t.created_at AS "createdAt", t.cancelled_at AS "cancelledAt"`;

/**
 * The console's lookup: the tickets whose id, idempotency key, externalRef, event id or notification id is
 * `q`, each a key lookup. A list of ids, not one OR across them: under an OR PostgreSQL can use no index, and
 * read every ticket and every key (0.45-1.23 s at 876,211 tickets against 1.0-3.2 ms this way,
 * docs/benchmarks.md). Keys and externalRefs are unique per tenant, and their indexes lead with the tenant:
 * they are looked up in each tenant (of `tenant`, a slug, when given); `OFFSET 0` keeps each lookup a
 * subquery run per tenant, which on small tables PostgreSQL would otherwise flatten into a walk of the index.
 * A key finds its ticket only in the key's own tenant.
 */
export function findStatement(q: string, tenant: string | undefined, limit: number): Prisma.Sql {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(q);
  const ofTenant = (alias: string) => (tenant ? Prisma.sql`AND ${Prisma.raw(alias)}.slug = ${tenant}` : Prisma.empty);
  const byUuid = uuid
    ? Prisma.sql`SELECT ${q}::uuid
                 UNION ALL SELECT aggregate_id FROM outbox_events WHERE event_id = ${q}::uuid
                 UNION ALL SELECT aggregate_id FROM outbox_dead_letters WHERE event_id = ${q}::uuid
                 UNION ALL SELECT ticket_id FROM ticket_events.inbox_events WHERE event_id = ${q}::uuid
                 UNION ALL SELECT ticket_id FROM notifications WHERE id = ${q}::uuid
                 UNION ALL `
    : Prisma.empty;
  return Prisma.sql`
      SELECT ${TICKET_COLUMNS}
        FROM tickets t JOIN tenants tn ON tn.id = t.tenant_id
       WHERE t.id IN (${byUuid}
               SELECT r.id FROM tenants rt CROSS JOIN LATERAL (
                 SELECT id FROM tickets WHERE tenant_id = rt.id AND external_ref = ${q} OFFSET 0) r
                WHERE true ${ofTenant('rt')}
               UNION ALL
               SELECT k.ticket_id FROM tenants kt CROSS JOIN LATERAL (
                 SELECT ik.ticket_id FROM idempotency_keys ik JOIN tickets it ON it.id = ik.ticket_id AND it.tenant_id = ik.tenant_id
                  WHERE ik.tenant_id = kt.id AND ik.key = ${q} OFFSET 0) k
                WHERE true ${ofTenant('kt')})
         ${ofTenant('tn')}
       ORDER BY t.created_at DESC LIMIT ${limit}::int`;
}

/** Everything the database knows about one ticket, for the console's timeline (read-only). */
@Injectable()
export class TicketTimelineRepository {
  constructor(private readonly db: Database) {}

  /**
   * Tickets whose id, idempotency key, externalRef, event id or notification id is `q`, of `tenant`
   * (a slug) or of every tenant, newest first. Keys and externalRefs are per tenant, so without a
   * tenant one `q` may name tickets of several.
   */
  async find(q: string, tenant?: string, limit = 20): Promise<TicketRow[]> {
    return this.db.prisma.$queryRaw<TicketRow[]>(findStatement(q, tenant, limit));
  }

  /** The ticket with this id, of this tenant (a slug) when given; by its primary key. */
  async ticket(id: string, tenant?: string): Promise<TicketRow | undefined> {
    const rows = await this.db.prisma.$queryRaw<TicketRow[]>(Prisma.sql`
      SELECT ${TICKET_COLUMNS}
        FROM tickets t JOIN tenants tn ON tn.id = t.tenant_id
       WHERE t.id = ${id}::uuid ${tenant ? Prisma.sql`AND tn.slug = ${tenant}` : Prisma.empty}`);
    return rows[0];
  }

  /**
   * Three rounds: the ticket's key, events and actions; its inbox rows (by the event ids, and while the
   * outbox rows are gone after OUTBOX_RETENTION, by the ticket within a day of its creation, a range the
   * BRIN index on received_at serves); its notifications by event id (their unique index).
   */
  async timeline(ticketId: string, tenant?: string): Promise<TicketTimelineRows | null> {
    const ticket = await this.ticket(ticketId, tenant);
    if (!ticket) return null;
    const id = ticket.id;
    const [keys, outbox, actions] = await Promise.all([
      this.db.prisma.$queryRaw<KeyRow[]>(Prisma.sql`
        SELECT key, operation, outcome, response_status AS "responseStatus", created_at AS "createdAt",
               replay_until AS "replayUntil", expires_at AS "expiresAt"
          FROM idempotency_keys WHERE ticket_id = ${id}::uuid ORDER BY created_at`),
      this.db.prisma.$queryRaw<OutboxRow[]>(Prisma.sql`
        SELECT o.seq::text, o.event_id::text AS "eventId", o.event_type AS "eventType", o.created_at AS "createdAt",
               s.published_at AS "publishedAt", s.kafka_timestamp AS "kafkaTimestamp", coalesce(q.attempts, 0) AS attempts,
               q.last_error AS "lastError", o.headers->>'traceparent' AS traceparent, false AS dead, NULL::timestamptz AS "deadAt"
          FROM outbox_events o
          LEFT JOIN outbox_pending q ON q.seq = o.seq
          LEFT JOIN LATERAL (
                SELECT p.published_at, p.kafka_timestamp FROM outbox_publications p
                 WHERE q.seq IS NULL AND int8range(p.first_seq, p.last_seq, '[]') @> o.seq AND o.seq = ANY (p.seqs)
                 ORDER BY p.id LIMIT 1) s ON true
         WHERE o.aggregate_id = ${id}::uuid
        UNION ALL
        SELECT seq::text, event_id::text, event_type, outbox_created_at, NULL, NULL, attempts, reason, headers->>'traceparent',
               true, created_at
          FROM outbox_dead_letters WHERE aggregate_id = ${id}::uuid
        ORDER BY seq`),
      this.db.prisma.$queryRaw<ActionRow[]>(Prisma.sql`
        SELECT kind, action, target_id AS "targetId", actor, note, created_at AS at
          FROM dead_letter_actions WHERE ticket_id = ${id}::uuid ORDER BY created_at`),
    ]);
    const eventIds = outbox.map((o) => o.eventId);
    const inbox = await this.db.prisma.$queryRaw<InboxRow[]>(Prisma.sql`
      SELECT group_id AS "groupId", event_id::text AS "eventId", event_type AS "eventType", topic, partition,
             "offset"::text AS "offset", duplicates, received_at AS "receivedAt"
        FROM ticket_events.inbox_events
       WHERE event_id = ANY(${eventIds}::uuid[])
          OR (ticket_id = ${id}::uuid AND received_at >= ${ticket.createdAt} AND received_at < ${ticket.createdAt}::timestamptz + interval '1 day')
       ORDER BY received_at`);
    const allEventIds = [...new Set([...eventIds, ...inbox.map((i) => i.eventId)])];
    const notifications = await this.db.prisma.$queryRaw<NotificationRow[]>(Prisma.sql`
      SELECT n.id::text, n.group_id AS "groupId", n.event_id::text AS "eventId", n.event_type AS "eventType", n.status,
             n.attempts, n.target_url AS "targetUrl", n.last_error AS "lastError", n.created_at AS "createdAt",
             n.delivered_at AS "deliveredAt",
             COALESCE((SELECT json_agg(json_build_object('attemptNo', a.attempt_no, 'statusCode', a.status_code, 'error', a.error,
                                                         'durationMs', a.duration_ms, 'at', a.created_at) ORDER BY a.attempt_no)
                         FROM notification_attempts a WHERE a.notification_id = n.id), '[]') AS "attemptLog"
        FROM notifications n WHERE n.event_id = ANY(${allEventIds}::uuid[]) ORDER BY n.created_at`);
    return { ticket, keys, outbox, inbox, notifications, actions };
  }
}
