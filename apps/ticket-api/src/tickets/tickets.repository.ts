import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { Prisma, type PrismaClient } from '@tickets/db';
import { IdempotencyKeysRepository as Keys, type KeyGuard, type KeyGuardRow, type NewKey } from '@tickets/idempotency';
import { Database, type Tx } from '../infra/database';
import type { TicketRow } from './ticket.mapper';

export interface NewEvent {
  eventId: string;
  eventType: string;
  payload: string;
  headers: string;
}

export interface CreateAttempt {
  /** What the key guard saw; the writes happened only if the lock was taken and the key unused. */
  guard: KeyGuard;
  created: boolean;
  /** A ticket of this tenant that already carries the request's externalRef. */
  duplicateTicketId: string | null;
}

const TICKET_COLUMNS = Prisma.sql`id, title, description, priority, status, external_ref AS "externalRef", requester, metadata,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

@Injectable()
export class TicketsRepository implements OnApplicationBootstrap {
  private readonly prisma: PrismaClient;

  constructor(private readonly db: Database) {
    this.prisma = db.prisma;
  }

  /**
   * The whole create as ONE statement, so one round trip and one implicit transaction: the key guard of
   * `IdempotencyKeysRepository` (take the key's advisory lock without waiting, look for an earlier use of
   * the key), a look for a ticket with the same externalRef, and only if all is clear insert the ticket,
   * its idempotency record (with the answer to give back on a retry) and its outbox event. A unique
   * violation (a race the snapshot could not see) aborts the whole statement; the caller runs it again
   * and then sees the winner. Sent with `Database.query` (pg directly) as a named statement: this is the
   * hot path of every create and of every replay the in-process cache cannot answer. Its text must stay
   * static (every value a parameter); a change of the text needs a new name (`ticket_create_v<n>`).
   */
  async tryCreate(attempt: Attempt): Promise<CreateAttempt> {
    const rows = await this.db.query<{ written: number; duplicate_id: string | null } & KeyGuardRow>(
      createStatement(attempt),
      'ticket_create_v1',
    );
    const result = rows[0];
    return { guard: Keys.readKeyGuard(result), created: result.written === 3, duplicateTicketId: result.duplicate_id };
  }

  /**
   * Before the API listens: opens DB_POOL_WARM connections with the create statement's catalog loaded, so
   * the first creates after a start do not each open a connection and load it (Database.warmUp).
   */
  async onApplicationBootstrap(): Promise<void> {
    await this.db.warmUp([createStatement(PLACEHOLDER_ATTEMPT)]);
  }

  async findTicket(
    tenantId: string,
    id: string,
    tx: Tx | PrismaClient = this.prisma,
    forUpdate = false,
  ): Promise<TicketRow | null> {
    const rows = await tx.$queryRaw<TicketRow[]>(Prisma.sql`
      SELECT ${TICKET_COLUMNS} FROM tickets WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid
      ${forUpdate ? Prisma.sql`FOR UPDATE` : Prisma.empty}`);
    return rows[0] ?? null;
  }

  async findByExternalRef(tenantId: string, externalRef: string): Promise<TicketRow[]> {
    return this.prisma.$queryRaw<TicketRow[]>(Prisma.sql`
      SELECT ${TICKET_COLUMNS} FROM tickets WHERE tenant_id = ${tenantId}::uuid AND external_ref = ${externalRef}`);
  }

  async listRecent(tenantId: string, limit: number, before?: Date): Promise<TicketRow[]> {
    return this.prisma.$queryRaw<TicketRow[]>(Prisma.sql`
      SELECT ${TICKET_COLUMNS} FROM tickets
      WHERE tenant_id = ${tenantId}::uuid ${before ? Prisma.sql`AND created_at < ${before}::timestamptz` : Prisma.empty}
      ORDER BY created_at DESC, id DESC LIMIT ${limit}::int`);
  }

  /** Must run inside the caller's transaction: marks the ticket cancelled. */
  async markCancelled(tx: Tx, tenantId: string, id: string, at: Date): Promise<TicketRow> {
    const rows = await tx.$queryRaw<TicketRow[]>(Prisma.sql`
      UPDATE tickets SET status = 'cancelled', cancelled_at = ${at}::timestamptz, updated_at = ${at}::timestamptz
      WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid
      RETURNING ${TICKET_COLUMNS}`);
    return rows[0];
  }

  /** Must run inside the caller's transaction: the outbox is the only way an event leaves the service. */
  async enqueueEvent(tx: Tx, tenantId: string, ticketId: string, event: NewEvent, at: Date): Promise<void> {
    await tx.$executeRaw(Prisma.sql`
      INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
      VALUES (${event.eventId}::uuid, ${tenantId}::uuid, 'ticket', ${ticketId}::uuid, ${event.eventType}, ${event.payload}::jsonb,
              ${event.headers}::jsonb, ${at}::timestamptz)`);
  }
}

type Attempt = { row: TicketRow & { tenantId: string; idempotencyKey: string }; key: NewKey; event: NewEvent };

/** The create statement (see tryCreate). Its text depends on no value, so PLACEHOLDER_ATTEMPT gives the same text. */
function createStatement({ row, key, event }: Attempt): Prisma.Sql {
  // ISO text rather than Date objects: pg's local-time formatting of a Date showed in the profile.
  const createdAt = row.createdAt.toISOString();
  const updatedAt = row.updatedAt === row.createdAt ? createdAt : row.updatedAt.toISOString();
  return Prisma.sql`
    WITH ${Keys.keyGuardCtes(row.tenantId, key.key)},
    duplicate AS MATERIALIZED (
      SELECT id FROM tickets
      WHERE ${row.externalRef}::text IS NOT NULL AND tenant_id = ${row.tenantId}::uuid AND external_ref = ${row.externalRef}::text
    ),
    clear AS MATERIALIZED (
      SELECT 1 AS one WHERE ${Keys.keyGuardClear()} AND NOT EXISTS (SELECT 1 FROM duplicate)
    ),
    new_ticket AS (
      INSERT INTO tickets (id, tenant_id, title, description, priority, status, external_ref, requester, metadata,
                           idempotency_key, created_at, updated_at)
      SELECT ${row.id}::uuid, ${row.tenantId}::uuid, ${row.title}, ${row.description}, ${row.priority}, ${row.status},
             ${row.externalRef}, ${json(row.requester)}::jsonb, ${json(row.metadata)}::jsonb, ${row.idempotencyKey},
             ${createdAt}::timestamptz, ${updatedAt}::timestamptz
      FROM clear
      RETURNING id
    ),
    ${Keys.insertKeyCte('new_key', key, 'new_ticket', 'id')},
    new_event AS (
      INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
      SELECT ${event.eventId}::uuid, ${row.tenantId}::uuid, 'ticket', new_ticket.id, ${event.eventType}, ${event.payload}::jsonb,
             ${event.headers}::jsonb, ${createdAt}::timestamptz
      FROM new_ticket
      RETURNING 1
    )
    SELECT ((SELECT count(*) FROM new_ticket) + (SELECT count(*) FROM new_key) + (SELECT count(*) FROM new_event))::int AS written,
           (SELECT id FROM duplicate LIMIT 1)::text AS duplicate_id,
           ${Keys.keyGuardColumns()}
    FROM (SELECT 1) AS one ${Keys.keyGuardJoin()}`;
}

const EPOCH = new Date(0);
const NIL = '00000000-0000-0000-0000-000000000000';
/** Values for the create statement's text only (the warm-up parses and plans it, never runs it). */
const PLACEHOLDER_ATTEMPT: Attempt = {
  row: {
    id: NIL,
    tenantId: NIL,
    idempotencyKey: '',
    title: '',
    description: null,
    priority: '',
    status: '',
    externalRef: null,
    requester: null,
    metadata: null,
    createdAt: EPOCH,
    updatedAt: EPOCH,
  },
  key: {
    tenantId: NIL,
    key: '',
    operation: '',
    fingerprint: '',
    requestBody: {},
    responseStatus: 0,
    responseBody: '',
    outcome: '',
    ticketId: NIL,
    createdAt: EPOCH,
    replayUntil: EPOCH,
    expiresAt: EPOCH,
  },
  event: { eventId: NIL, eventType: '', payload: '', headers: '' },
};

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));
