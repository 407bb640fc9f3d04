// databaseFailure() on real errors from a PostgreSQL server of the test's own (scripts/chaos/pg-cluster.ts)
// that is filled up, shut down, stopped and restarted, through Prisma's driver adapter (the API's path)
// and through the tracked pg pool. The shared server on 5432 is never touched.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createPrismaClient, databaseFailure, TrackedPool, type PrismaClient } from '@tickets/db';
import { PgCluster } from '../../scripts/chaos/pg-cluster';

jest.setTimeout(180_000);

const PORT = Number(process.env.TEST_PG_CLUSTER_PORT ?? 55441);
const pg = new PgCluster({
  dir: join(tmpdir(), `tickets-db-unavailable-it-${process.pid}`),
  port: PORT,
  maxConnections: 12,
});
const open: Array<{ end(): Promise<unknown> } | { $disconnect(): Promise<unknown> }> = [];

beforeAll(async () => {
  await pg.init();
  await pg.start();
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  await c.query('CREATE TABLE writes (id int)');
  await c.end();
});

afterAll(async () => {
  for (const o of open) await ('end' in o ? o.end() : o.$disconnect()).catch(() => undefined);
  await pg.destroy();
});

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function prisma(): PrismaClient {
  const p = createPrismaClient(pg.url, 2, 'db-unavailable-it');
  open.push(p);
  return p;
}
function pool(): TrackedPool {
  const p = new TrackedPool({
    connectionString: pg.url,
    max: 2,
    application_name: 'db-unavailable-it',
    connectionTimeoutMillis: 5_000,
  });
  p.on('error', () => undefined);
  open.push(p);
  return p;
}
async function admin<T>(sql: string): Promise<T[]> {
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}
/** Terminates the session running a pg_sleep once it is visible in pg_stat_activity. */
async function terminateSleeper(): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const rows = await admin<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query LIKE '%pg_sleep%' AND pid <> pg_backend_pid() AND state = 'active'`,
    );
    if (rows.some((r) => r.ok)) return;
    await sleep(50);
  }
  throw new Error('no sleeping session to terminate');
}

it('a write whose session is terminated while it runs: outcome unknown (Prisma and pg)', async () => {
  const viaPrisma = caught(prisma().$executeRaw`INSERT INTO writes SELECT 1 FROM pg_sleep(30)`);
  await terminateSleeper();
  const e1 = await viaPrisma;
  expect((e1 as { code?: string }).code).toBe('P2010');
  expect(databaseFailure(e1)).toBe('outcome_unknown');

  const viaPg = caught(pool().query('INSERT INTO writes SELECT 2 FROM pg_sleep(30)'));
  await terminateSleeper();
  const e2 = await viaPg;
  expect((e2 as { code?: string }).code).toBe('57P01');
  expect(databaseFailure(e2)).toBe('outcome_unknown');
});

it('a statement issued on a session that was already terminated: unavailable, nothing sent', async () => {
  const p = pool();
  const client = await p.connect();
  const ended = new Promise((r) => client.once('end', r));
  client.on('error', () => undefined);
  const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  await admin(`SELECT pg_terminate_backend(${pid})`);
  await ended;
  const e = await caught(client.query('INSERT INTO writes VALUES (3)'));
  client.release(true);
  expect(e).toBeInstanceOf(Error);
  expect(databaseFailure(e)).toBe('unavailable');
  expect(await admin('SELECT 1 FROM writes WHERE id = 3')).toHaveLength(0);
});

it('too many connections (53300): unavailable', async () => {
  const hogs: Client[] = [];
  try {
    for (;;) {
      const c = new Client({ connectionString: pg.url });
      const err = await caught(c.connect());
      if (err) break;
      hogs.push(c);
    }
    const viaPrisma = await caught(prisma().$queryRaw`SELECT 1`);
    expect(databaseFailure(viaPrisma)).toBe('unavailable');
    const viaPg = await caught(pool().query('SELECT 1'));
    expect((viaPg as { code?: string }).code).toBe('53300');
    expect(databaseFailure(viaPg)).toBe('unavailable');
  } finally {
    for (const c of hogs) await c.end().catch(() => undefined);
  }
});

it('shutting down (57P03), stopped (connection refused), restarted under a running write', async () => {
  // A smart shutdown waits for this session; meanwhile every new session is refused with 57P03.
  const holder = new Client({ connectionString: pg.url });
  await holder.connect();
  holder.on('error', () => undefined);
  await pg.stop('smart', false);
  let shutting: unknown;
  for (let i = 0; i < 100 && (shutting as { code?: string } | undefined)?.code !== '57P03'; i++) {
    shutting = await caught(pool().query('SELECT 1'));
    await sleep(50);
  }
  expect((shutting as { code?: string }).code).toBe('57P03');
  expect(databaseFailure(shutting)).toBe('unavailable');
  const shuttingPrisma = await caught(prisma().$queryRaw`SELECT 1`);
  expect(databaseFailure(shuttingPrisma)).toBe('unavailable');
  await holder.end();
  await pg.stop('fast').catch(() => undefined); // already stopping: wait until it is down

  const client = prisma();
  const refused = await caught(client.$queryRaw`SELECT 1`);
  expect((refused as { code?: string }).code).toBe('P2010');
  expect(databaseFailure(refused)).toBe('unavailable');
  const refusedTx = await caught(client.$transaction(async (tx) => tx.$executeRaw`INSERT INTO writes VALUES (4)`));
  expect(databaseFailure(refusedTx)).toBe('unavailable');
  const refusedPg = await caught(pool().query('SELECT 1'));
  expect((refusedPg as { code?: string }).code).toBe('ECONNREFUSED');
  expect(databaseFailure(refusedPg)).toBe('unavailable');

  // A fast restart while a write runs: the write's outcome is unknown; the same client works afterwards.
  await pg.start();
  const running = caught(client.$executeRaw`INSERT INTO writes SELECT 5 FROM pg_sleep(30)`);
  for (
    let i = 0;
    i < 100 &&
    !(
      await admin(
        `SELECT 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep%' AND state = 'active' AND pid <> pg_backend_pid()`,
      )
    ).length;
    i++
  )
    await sleep(50);
  await pg.stop('fast');
  expect(databaseFailure(await running)).toBe('outcome_unknown');
  await pg.start();
  let after: unknown = await caught(client.$queryRaw`SELECT 1`);
  // The pool may still hand out one session that died with the server: that error must say so too.
  if (after) {
    expect(databaseFailure(after)).toBeDefined();
    after = await caught(client.$queryRaw`SELECT 1`);
  }
  expect(after).toBeUndefined();
});
