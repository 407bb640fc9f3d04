// Outbox test support: valid event envelopes + rows (inserted with SQL, not through the API), a
// database of its own per test file for relay tests, and a reader for what reached a topic.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import { Client, type ClientBase, type Pool } from 'pg';
import { TICKET_CANCELLED_V1, TICKET_CREATED_V1, type TicketEvent } from '@tickets/contracts';
import { TEST_DATABASE_URL } from './env';

const ROOT = join(__dirname, '..', '..');

export interface OutboxRowSpec {
  eventId: string;
  tenantId: string;
  aggregateId: string;
  eventType: string;
  /** The envelope (valid unless a test breaks it on purpose). */
  payload: Record<string, unknown>;
  headers: Record<string, string>;
}

/** A valid TicketCreatedV1 / TicketCancelledV1 envelope and its outbox row. */
export function ticketEventRow(opts: {
  tenantId: string;
  ticketId?: string;
  kind: 'created' | 'cancelled';
  metadata?: Record<string, unknown>;
}): OutboxRowSpec {
  const ticketId = opts.ticketId ?? randomUUID();
  const eventId = randomUUID();
  const now = new Date().toISOString();
  const correlationId = `corr-${eventId.slice(0, 8)}`;
  const type = opts.kind === 'created' ? TICKET_CREATED_V1 : TICKET_CANCELLED_V1;
  const envelope: TicketEvent = {
    id: eventId,
    type,
    occurredAt: now,
    tenantId: opts.tenantId,
    ticketId,
    idempotencyKey: `idem-${eventId}`,
    correlationId,
    data: {
      id: ticketId,
      title: `ticket ${ticketId.slice(0, 8)}`,
      description: null,
      priority: 'normal',
      status: opts.kind === 'created' ? 'open' : 'cancelled',
      externalRef: null,
      requester: null,
      metadata: opts.metadata ?? null,
      createdAt: now,
      updatedAt: now,
    },
  };
  return {
    eventId,
    tenantId: opts.tenantId,
    aggregateId: ticketId,
    eventType: type,
    payload: envelope as unknown as Record<string, unknown>,
    headers: {
      traceparent: `00-${eventId.replace(/-/g, '')}-${eventId.slice(0, 16).replace(/-/g, '0')}-01`,
      'correlation-id': correlationId,
    },
  };
}

/** Both events of one ticket, created then cancelled. */
export function ticketLifecycle(tenantId: string): [OutboxRowSpec, OutboxRowSpec] {
  const created = ticketEventRow({ tenantId, kind: 'created' });
  return [created, ticketEventRow({ tenantId, ticketId: created.aggregateId, kind: 'cancelled' })];
}

/** Inserts rows in one statement (one transaction, seq in array order); returns their seqs. */
export async function insertOutboxRows(db: Pick<ClientBase | Pool, 'query'>, rows: OutboxRowSpec[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const res = await db.query<{ seq: string }>(
    `INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
     SELECT e, t, 'ticket', a, ty, p, h
       FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[]) WITH ORDINALITY AS r(e, t, a, ty, p, h, n)
      ORDER BY n
     RETURNING seq::text AS seq`,
    [
      rows.map((r) => r.eventId),
      rows.map((r) => r.tenantId),
      rows.map((r) => r.aggregateId),
      rows.map((r) => r.eventType),
      rows.map((r) => JSON.stringify(r.payload)),
      rows.map((r) => JSON.stringify(r.headers)),
    ],
  );
  return res.rows.map((r) => r.seq);
}

export interface RelayTestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A freshly migrated database for one relay test file, named after TEST_DATABASE_URL's
 * (`tickets_test_relay_<label>`). A relay drains its whole database's outbox, so relay tests must
 * not share one with each other, with the API's tests or with anyone's running relay.
 */
export async function createRelayTestDatabase(
  label: string,
  opts: { until?: string } = {},
): Promise<RelayTestDatabase> {
  const base = new URL(TEST_DATABASE_URL);
  const name = `${decodeURIComponent(base.pathname.slice(1))}_relay_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
  const admin = new URL(TEST_DATABASE_URL);
  admin.pathname = '/postgres';
  const target = new URL(TEST_DATABASE_URL);
  target.pathname = `/${name}`;
  const asAdmin = async <T>(work: (c: Client) => Promise<T>): Promise<T> => {
    const c = new Client({ connectionString: admin.toString() });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  };
  const ident = `"${name.replace(/"/g, '""')}"`;
  await asAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`));
  // With `until`: Prisma's migrations up to that one only, a database of an earlier schema to upgrade.
  const until = opts.until ? ['--until', opts.until] : [];
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'db-migrate.mjs'), 'deploy', ...until], {
    env: { ...process.env, DATABASE_URL: target.toString() },
    stdio: 'pipe',
  });
  const drop = async () => {
    // A pool's end() resolves before its connections' sockets have closed: a DROP ... WITH (FORCE) at once
    // terminates those sessions, and a pool with no 'error' listener then throws 57P01 into the test file.
    // So wait (up to 10 s) for the sessions of a test that closed its clients to go, then drop, forcing
    // only what is still connected after that.
    await asAdmin(async (c) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
        const { rows } = await c.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
          [name],
        );
        if (rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await c.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`);
    });
  };
  return { url: target.toString(), drop };
}

export interface ReceivedMessage {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** The record's timestamp, ms since the epoch. */
  timestamp: number;
}

/**
 * Everything in `topic` right now (up to the high watermarks), in partition/offset order. Uses a
 * throw-away consumer group, deleted afterwards.
 */
export async function readTopic(brokers: string[], topic: string, timeoutMs = 30_000): Promise<ReceivedMessage[]> {
  const kafka = new Kafka({ brokers, clientId: 'relay-test-reader', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `relay-test-reader-${randomUUID()}`;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    const expected = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
    if (expected === 0) return [];
    const received: ReceivedMessage[] = [];
    const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 200 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      let done!: () => void;
      const all = new Promise<void>((r) => (done = r));
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          received.push({
            partition,
            offset: Number(message.offset),
            key: message.key?.toString() ?? '',
            value: message.value?.toString() ?? '',
            headers: decodeHeaders(message.headers),
            timestamp: Number(message.timestamp),
          });
          if (received.length >= expected) done();
        },
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        all,
        new Promise(
          (_, reject) =>
            (timer = setTimeout(
              () => reject(new Error(`read ${received.length}/${expected} messages of ${topic}`)),
              timeoutMs,
            )),
        ),
      ]);
      clearTimeout(timer);
    } finally {
      await consumer.disconnect();
    }
    await admin.deleteGroups([groupId]).catch(() => undefined);
    return received.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopic(brokers: string[], topic: string): Promise<void> {
  const admin = new Kafka({ brokers, clientId: 'relay-test-admin', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}

/** Polls `check` every 100 ms until it returns true (or throws after timeoutMs, naming `what`). */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function decodeHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v !== undefined) out[k] = (Array.isArray(v) ? v[0] : v).toString();
  }
  return out;
}
