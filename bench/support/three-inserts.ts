// The hand-written create: BEGIN; INSERT tickets; INSERT idempotency_keys; INSERT outbox_events; COMMIT over
// `pg`, with the same columns and payload sizes as the API's one-statement create. bench:create runs it on
// plain tables (reference a) and on the project's schema (reference b); bench:schema-cost on variants of it.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { percentile } from './stats';

/** The create request: ~1 KB of JSON, no externalRef (so every new key makes a new ticket). */
export const BODY = {
  title: 'Bench: the printer on floor 3 jams on every duplex job',
  description:
    'Since Monday the shared printer on floor 3 (HP LaserJet, asset 00417) jams whenever a job is printed double-sided. ' +
    'Single-sided jobs go through. The paper tray was refilled with the usual 80 g/m2 stock and the rollers were wiped; ' +
    'the jam happens at the duplex unit, the display shows error 13.B2.D1. Several people on the floor depend on it for ' +
    'contract printouts, so please send someone or tell us which other printer to use in the meantime. ' +
    'Steps to reproduce: print any two-page PDF with "print on both sides" selected. Expected: one sheet printed on both ' +
    'sides. Actual: the sheet stops halfway out of the duplex unit and has to be pulled out by hand.',
  priority: 'high',
  requester: { name: 'Bench Agent', email: 'agent@bench.example' },
  metadata: { source: 'bench', channel: 'agent', tags: ['printer', 'floor-3', 'duplex'], site: 'HQ', attempt: 1 },
};
export const BODY_TEXT = JSON.stringify(BODY);

/**
 * The three tables as someone writing the transaction by hand would declare them: the project's column
 * types (uuid, text, jsonb for JSON documents, timestamptz), primary keys only, no secondary index, no
 * trigger, no column default but the outbox's bigserial.
 */
export const plainTablesDdl = (schema: string): string[] => [
  `DROP SCHEMA IF EXISTS ${schema} CASCADE`,
  `CREATE SCHEMA ${schema}`,
  `CREATE TABLE ${schema}.tickets (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, title text NOT NULL, description text,
     priority text NOT NULL, status text NOT NULL, external_ref text, requester jsonb, metadata jsonb, idempotency_key text,
     created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`,
  `CREATE TABLE ${schema}.idempotency_keys (tenant_id uuid NOT NULL, key text NOT NULL, operation text NOT NULL,
     fingerprint text NOT NULL, request_body jsonb NOT NULL, response_status int NOT NULL, response_body text,
     outcome text NOT NULL, ticket_id uuid NOT NULL, created_at timestamptz NOT NULL, replay_until timestamptz NOT NULL,
     expires_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, key))`,
  `CREATE TABLE ${schema}.outbox_events (seq bigserial PRIMARY KEY, event_id uuid NOT NULL, tenant_id uuid NOT NULL,
     aggregate_type text NOT NULL, aggregate_id uuid NOT NULL, event_type text NOT NULL, payload jsonb NOT NULL,
     headers jsonb NOT NULL, created_at timestamptz NOT NULL)`,
];

/** The three INSERTs against the tables of `schema`. */
export function threeInsertSql(schema: string) {
  return {
    ticket: `INSERT INTO ${schema}.tickets (id, tenant_id, title, description, priority, status, external_ref, requester, metadata,
      idempotency_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    key: `INSERT INTO ${schema}.idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
      outcome, ticket_id, created_at, replay_until, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    event: `INSERT INTO ${schema}.outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  };
}

const FINGERPRINT = createHash('sha256').update('ticket.create\n').update(BODY_TEXT).digest('hex');

/** The three rows the API writes for one create, built the same way (ticket JSON as response and in the event). */
function threeInsertRows(tenantId: string, key: string) {
  const now = new Date();
  const id = randomUUID();
  const ticket = {
    id,
    title: BODY.title,
    description: BODY.description,
    priority: BODY.priority,
    status: 'open',
    externalRef: null,
    requester: BODY.requester,
    metadata: BODY.metadata,
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
  };
  const response = JSON.stringify(ticket);
  const correlationId = randomUUID();
  const eventId = randomUUID();
  const event = {
    id: eventId,
    type: 'ticket.created.v1',
    occurredAt: now.toISOString(),
    tenantId,
    ticketId: id,
    idempotencyKey: key,
    correlationId,
    data: ticket,
  };
  const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
  return {
    ticket: [
      id,
      tenantId,
      BODY.title,
      BODY.description,
      BODY.priority,
      'open',
      null,
      JSON.stringify(BODY.requester),
      JSON.stringify(BODY.metadata),
      key,
      now,
      now,
    ],
    key: [
      tenantId,
      key,
      'ticket.create',
      FINGERPRINT,
      BODY_TEXT,
      201,
      response,
      'created',
      id,
      now,
      new Date(now.getTime() + 86_400_000),
      new Date(now.getTime() + 7 * 86_400_000),
    ],
    event: [
      eventId,
      tenantId,
      'ticket',
      id,
      'ticket.created.v1',
      JSON.stringify(event),
      JSON.stringify({ traceparent, 'correlation-id': correlationId }),
      now,
    ],
  };
}

export interface LoopResult {
  ok: number;
  bad: number;
  lastError: string;
  seconds: number;
  p50: number;
  p99: number;
}

let seq = 0;

/** `concurrency` workers on `pool`, each running the three-insert transaction back to back for `seconds`. */
export async function runThreeInsertLoop(
  pool: Pool,
  o: { schema: string; tenantId: string; concurrency: number; seconds: number; keyPrefix: string },
): Promise<LoopResult> {
  const sql = threeInsertSql(o.schema);
  const lat: number[] = [];
  let ok = 0;
  let bad = 0;
  let lastError = '';
  const t0 = performance.now();
  const end = t0 + o.seconds * 1000;
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        const rows = threeInsertRows(o.tenantId, `${o.keyPrefix}-${++seq}`);
        const c = await pool.connect();
        try {
          await c.query('BEGIN');
          await c.query(sql.ticket, rows.ticket);
          await c.query(sql.key, rows.key);
          await c.query(sql.event, rows.event);
          await c.query('COMMIT');
          ok++;
          lat.push(performance.now() - s);
        } catch (e) {
          bad++;
          lastError = (e as Error).message;
          await c.query('ROLLBACK').catch(() => undefined);
        } finally {
          c.release();
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { ok, bad, lastError, seconds, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) };
}
