import { Injectable } from '@nestjs/common';
import { Prisma, type PrismaClient } from '@tickets/db';
import { Database } from '../infra/database';
import type { TicketRow } from './ticket.mapper';

/** A stored idempotency record, as the create/cancel paths need it. */
export interface StoredKey {
  operation: string;
  fingerprint: string;
  requestBody: Record<string, unknown>;
  responseStatus: number;
  responseBody: string | null;
  outcome: string;
  ticketId: string;
  createdAt: Date;
  replayUntil: Date;
  expiresAt: Date;
}

export interface NewKey {
  tenantId: string;
  key: string;
  operation: string;
  fingerprint: string;
  requestBody: Record<string, unknown>;
  responseStatus: number;
  responseBody: string;
  outcome: string;
  ticketId: string;
  createdAt: Date;
  replayUntil: Date;
  expiresAt: Date;
}

export interface NewEvent {
  eventId: string;
  eventType: string;
  payload: string;
  headers: string;
}

export interface CreateAttempt {
  /** false: another request holds this key's lock right now (in flight). */
  gotLock: boolean;
  created: boolean;
  prior: StoredKey | null;
  /** A ticket of this tenant that already carries the request's externalRef. */
  duplicateTicketId: string | null;
}

/** The lock that marks a key "in flight": a transaction-scoped advisory lock on hash(tenant, key). */
const keyLock = (tenantId: string, key: string) => Prisma.sql`hashtextextended(${tenantId} || ':' || ${key}, 0)`;

const STORED_KEY_COLUMNS = Prisma.sql`operation, fingerprint, request_body AS "requestBody", response_status AS "responseStatus",
  response_body AS "responseBody", outcome, ticket_id AS "ticketId", created_at AS "createdAt",
  replay_until AS "replayUntil", expires_at AS "expiresAt"`;

const TICKET_COLUMNS = Prisma.sql`id, title, description, priority, status, external_ref AS "externalRef", requester, metadata,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

type Tx = Prisma.TransactionClient;

@Injectable()
export class TicketsRepository {
  private readonly prisma: PrismaClient;

  constructor(db: Database) {
    this.prisma = db.prisma;
  }

  /**
   * The whole create as ONE statement, so one round trip and one implicit transaction: take the key's
   * advisory lock (without waiting), look for an earlier use of the key and for a ticket with the same
   * externalRef, and only if all is clear insert the ticket, its idempotency record (with the response
   * to replay) and its outbox event. A unique violation (a race the snapshot could not see) aborts the
   * whole statement; the caller runs it again and then sees the winner.
   */
  async tryCreate(t: { row: TicketRow & { tenantId: string; idempotencyKey: string }; key: NewKey; event: NewEvent }): Promise<CreateAttempt> {
    const { row, key, event } = t;
    const rows = await this.prisma.$queryRaw<
      Array<{ got: boolean; created: number; dup_id: string | null } & Partial<StoredKey> & { has_prior: boolean }>
    >(Prisma.sql`
      WITH lk AS MATERIALIZED (
        SELECT pg_try_advisory_xact_lock(${keyLock(row.tenantId, key.key)}) AS got
      ),
      prior AS MATERIALIZED (
        SELECT ${STORED_KEY_COLUMNS} FROM idempotency_keys WHERE tenant_id = ${row.tenantId}::uuid AND key = ${key.key}
      ),
      dup AS MATERIALIZED (
        SELECT id FROM tickets
        WHERE ${row.externalRef}::text IS NOT NULL AND tenant_id = ${row.tenantId}::uuid AND external_ref = ${row.externalRef}::text
      ),
      go AS MATERIALIZED (
        SELECT 1 AS one FROM lk WHERE lk.got AND NOT EXISTS (SELECT 1 FROM prior) AND NOT EXISTS (SELECT 1 FROM dup)
      ),
      t AS (
        INSERT INTO tickets (id, tenant_id, title, description, priority, status, external_ref, requester, metadata,
                             idempotency_key, created_at, updated_at)
        SELECT ${row.id}::uuid, ${row.tenantId}::uuid, ${row.title}, ${row.description}, ${row.priority}, ${row.status},
               ${row.externalRef}, ${json(row.requester)}::jsonb, ${json(row.metadata)}::jsonb, ${row.idempotencyKey},
               ${row.createdAt}::timestamptz, ${row.updatedAt}::timestamptz
        FROM go
        RETURNING id
      ),
      k AS (
        INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
                                      outcome, ticket_id, created_at, replay_until, expires_at)
        SELECT ${key.tenantId}::uuid, ${key.key}, ${key.operation}, ${key.fingerprint}, ${JSON.stringify(key.requestBody)}::jsonb,
               ${key.responseStatus}::int, ${key.responseBody}, ${key.outcome}, t.id, ${key.createdAt}::timestamptz,
               ${key.replayUntil}::timestamptz, ${key.expiresAt}::timestamptz
        FROM t
        RETURNING 1
      ),
      o AS (
        INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
        SELECT ${event.eventId}::uuid, ${row.tenantId}::uuid, 'ticket', t.id, ${event.eventType}, ${event.payload}::jsonb,
               ${event.headers}::jsonb, ${row.createdAt}::timestamptz
        FROM t
        RETURNING 1
      )
      SELECT (SELECT got FROM lk) AS got,
             ((SELECT count(*) FROM t) + (SELECT count(*) FROM k) + (SELECT count(*) FROM o))::int AS created,
             (SELECT id FROM dup LIMIT 1)::text AS dup_id,
             (prior.operation IS NOT NULL) AS has_prior,
             prior.*
      FROM (SELECT 1) AS one LEFT JOIN prior ON true`);
    const r = rows[0];
    return {
      gotLock: r.got,
      created: r.created === 3,
      duplicateTicketId: r.dup_id,
      prior: r.has_prior ? toStoredKey(r) : null,
    };
  }

  /** Records a key whose request was answered with an existing ticket. false: the key was taken meanwhile. */
  async insertKey(key: NewKey): Promise<boolean> {
    const n = await this.prisma.$executeRaw(Prisma.sql`
      INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
                                    outcome, ticket_id, created_at, replay_until, expires_at)
      VALUES (${key.tenantId}::uuid, ${key.key}, ${key.operation}, ${key.fingerprint}, ${JSON.stringify(key.requestBody)}::jsonb,
              ${key.responseStatus}::int, ${key.responseBody}, ${key.outcome}, ${key.ticketId}::uuid, ${key.createdAt}::timestamptz,
              ${key.replayUntil}::timestamptz, ${key.expiresAt}::timestamptz)
      ON CONFLICT (tenant_id, key) DO NOTHING`);
    return n === 1;
  }

  async findTicket(tenantId: string, id: string, tx: Tx | PrismaClient = this.prisma, forUpdate = false): Promise<TicketRow | null> {
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

  async findKey(tenantId: string, key: string, tx: Tx | PrismaClient = this.prisma): Promise<StoredKey | null> {
    const rows = await tx.$queryRaw<StoredKey[]>(Prisma.sql`
      SELECT ${STORED_KEY_COLUMNS} FROM idempotency_keys WHERE tenant_id = ${tenantId}::uuid AND key = ${key}`);
    return rows[0] ? toStoredKey(rows[0]) : null;
  }

  /** True while some transaction holds the key's lock: the first request with this key is in flight. */
  async isKeyInFlight(tenantId: string, key: string): Promise<boolean> {
    const rows = await this.prisma.$queryRaw<Array<{ busy: boolean }>>(Prisma.sql`
      WITH h AS (SELECT ${keyLock(tenantId, key)} AS v)
      SELECT EXISTS (
        SELECT 1 FROM pg_locks l, h
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid::bigint = ((h.v >> 32) & 4294967295)
          AND l.objid::bigint = (h.v & 4294967295)
      ) AS busy`);
    return rows[0]?.busy ?? false;
  }

  /** Takes the key's in-flight lock inside `tx` without waiting. */
  async tryLockKey(tx: Tx, tenantId: string, key: string): Promise<boolean> {
    const rows = await tx.$queryRaw<Array<{ got: boolean }>>(Prisma.sql`SELECT pg_try_advisory_xact_lock(${keyLock(tenantId, key)}) AS got`);
    return rows[0].got;
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

  /** Must run inside the caller's transaction. */
  async insertKeyTx(tx: Tx, key: NewKey): Promise<void> {
    await tx.$executeRaw(Prisma.sql`
      INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
                                    outcome, ticket_id, created_at, replay_until, expires_at)
      VALUES (${key.tenantId}::uuid, ${key.key}, ${key.operation}, ${key.fingerprint}, ${JSON.stringify(key.requestBody)}::jsonb,
              ${key.responseStatus}::int, ${key.responseBody}, ${key.outcome}, ${key.ticketId}::uuid, ${key.createdAt}::timestamptz,
              ${key.replayUntil}::timestamptz, ${key.expiresAt}::timestamptz)`);
  }

  /** The one way to run a multi-statement write: an interactive Prisma transaction. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(work, { maxWait: 5_000, timeout: 15_000 });
  }
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

function toStoredKey(r: Partial<StoredKey>): StoredKey {
  return {
    operation: r.operation!,
    fingerprint: r.fingerprint!,
    requestBody: (r.requestBody ?? {}) as Record<string, unknown>,
    responseStatus: Number(r.responseStatus),
    responseBody: r.responseBody ?? null,
    outcome: r.outcome!,
    ticketId: r.ticketId!,
    createdAt: new Date(r.createdAt!),
    replayUntil: new Date(r.replayUntil!),
    expiresAt: new Date(r.expiresAt!),
  };
}
