// Two real relay processes (`apps/relay`, compiled: needs `npm run build`) on one database: the
// standby waits on the leader lock and takes over as soon as the leader lets go, whether the
// leader is stopped with SIGTERM (graceful: finishes its batch, unlocks, exits 0) or SIGKILLed
// (PostgreSQL ends its session, and the lock with it). Every event reaches the topic exactly once,
// created before cancelled. With REPORT_TIMINGS=1 the takeover times are printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import { DEFAULT_RELAY_LOCK_KEY } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  readTopic,
  ticketLifecycle,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';
import { trackChild } from '../support/children';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');
const topic = `relay-takeover-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
let database: RelayTestDatabase;
let db: Pool;
const procs: RelayProcess[] = [];

interface RelayProcess {
  name: string;
  proc: ChildProcess;
  /** Parsed JSON log lines so far. */
  lines: Array<{ msg: string; time: string }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startRelay(name: string): RelayProcess {
  const proc = trackChild(
    spawn(process.execPath, [join(ROOT, 'apps/relay/dist/main.js')], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
        KAFKA_CLIENT_ID: `relay-takeover-${name}`,
        TICKET_EVENTS_TOPIC: topic,
        LOG_LEVEL: 'info',
        RELAY_METRICS_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const relay: RelayProcess = {
    name,
    proc,
    lines: [],
    exited: new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        relay.lines.push(JSON.parse(line));
      } catch {
        // not JSON (node's own warnings): ignore
      }
    }
  });
  proc.stderr!.resume();
  procs.push(relay);
  return relay;
}

const logged = (r: RelayProcess, msg: string) => r.lines.find((l) => l.msg === msg);
const pending = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;
/** Sessions queued on the relay lock (a standby in its lock wait). */
const waitingOnLock = async () =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [DEFAULT_RELAY_LOCK_KEY],
    )
  ).rows[0].n;

beforeAll(async () => {
  database = await createRelayTestDatabase('takeover');
  db = new Pool({ connectionString: database.url, max: 2 });
  // An idle connection ended by the server (another job terminating sessions) is replaced; not this test's subject.
  db.on('error', () => undefined);
});

afterAll(async () => {
  for (const r of procs) r.proc.kill('SIGKILL');
  await Promise.all(procs.map((r) => r.exited));
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it('a standby takes over at once after SIGTERM and after SIGKILL of the leader; every event once, in order', async () => {
  const tickets = Array.from({ length: 90 }, () => ticketLifecycle(tenantId));
  const a = startRelay('a');
  await waitFor('a to lead', () => Boolean(logged(a, 'became the active outbox relay')), 60_000);
  const b = startRelay('b');
  await waitFor('b to wait on the lock', async () => (await waitingOnLock()) === 1, 60_000);
  await insertOutboxRows(
    db,
    tickets.slice(0, 30).map(([c]) => c),
  );
  await waitFor('a to publish the first wave', async () => (await pending()) === 0, 60_000);

  // SIGTERM while rows keep coming: a finishes or abandons its batch, unlocks, exits 0; b leads.
  const waveTwo = insertOutboxRows(db, [
    ...tickets.slice(0, 30).map(([, x]) => x),
    ...tickets.slice(30, 60).map(([c]) => c),
  ]);
  const termAt = Date.now();
  a.proc.kill('SIGTERM');
  await waveTwo;
  await waitFor('b to lead', () => Boolean(logged(b, 'became the active outbox relay')), 60_000);
  expect(await a.exited).toEqual({ code: 0, signal: null });
  expect(logged(a, 'outbox relay stopped')).toBeDefined();
  await waitFor('b to publish the second wave', async () => (await pending()) === 0, 60_000);

  // SIGKILL: no goodbye; PostgreSQL ends the session, the queued standby gets the lock.
  const c = startRelay('c');
  await waitFor('c to wait on the lock', async () => (await waitingOnLock()) === 1, 60_000);
  const killAt = Date.now();
  b.proc.kill('SIGKILL');
  await waitFor('c to lead', () => Boolean(logged(c, 'became the active outbox relay')), 60_000);
  expect((await b.exited).signal).toBe('SIGKILL');
  await insertOutboxRows(db, [...tickets.slice(30, 60).map(([, x]) => x), ...tickets.slice(60, 90).flat()]);
  await waitFor('c to publish the third wave', async () => (await pending()) === 0, 60_000);

  if (process.env.REPORT_TIMINGS) {
    const since = (r: RelayProcess, at: number) => Date.parse(logged(r, 'became the active outbox relay')!.time) - at;
    console.log(
      `relay takeover: SIGTERM -> standby leads ${since(b, termAt)} ms; SIGKILL -> standby leads ${since(c, killAt)} ms`,
    );
  }

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  const ids = messages.map((m) => m.headers['event-id']);
  expect(ids).toHaveLength(180);
  expect(new Set(ids).size).toBe(180);
  for (const [created, cancelled] of tickets) {
    expect(messages.filter((m) => m.key === created.aggregateId).map((m) => m.headers['event-id'])).toEqual([
      created.eventId,
      cancelled.eventId,
    ]);
  }
});
