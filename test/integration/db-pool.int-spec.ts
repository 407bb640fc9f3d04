// The hot paths' pools keep the connections they opened (libs/db createDatabaseClients `keepOpen`): a new
// connection's first statements load PostgreSQL's catalog for the backend and parse each named statement again,
// 30-45 ms for the create under load, so a pool that closed its idle connections after a quiet spell paid that
// on the requests of the next burst. Counted from PostgreSQL's side (pg_stat_activity), not from the pool's.
import { Pool } from 'pg';
import { createDatabaseClients, Prisma } from '@tickets/db';
import { TEST_DATABASE_URL } from '../support/env';

const IDLE_TIMEOUT_MS = 50;

async function backends(admin: Pool, app: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
    [app],
  );
  return rows[0].n;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let admin: Pool;
beforeAll(() => {
  admin = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
});
afterAll(async () => {
  await admin.end();
});

it('keeps the connections a burst opened long after they went idle', async () => {
  const app = 'db-pool-keep-default';
  const clients = createDatabaseClients(TEST_DATABASE_URL, 3, app, { idleTimeoutMs: IDLE_TIMEOUT_MS });
  try {
    // Three statements at once: the pool opens three connections.
    await Promise.all([1, 2, 3].map(() => clients.query(Prisma.sql`SELECT pg_sleep(0.1)`)));
    expect(await backends(admin, app)).toBe(3);
    // Ten idle timeouts later, every one is still open.
    await sleep(10 * IDLE_TIMEOUT_MS);
    expect(await backends(admin, app)).toBe(3);
    // And serves the next statement.
    expect(await clients.query<{ n: number }>(Prisma.sql`SELECT 1 AS n`)).toEqual([{ n: 1 }]);
    expect(await backends(admin, app)).toBe(3);
  } finally {
    await clients.close();
  }
});

it('closes the idle connections beyond keepOpen after the idle timeout', async () => {
  const app = 'db-pool-keep-one';
  const clients = createDatabaseClients(TEST_DATABASE_URL, 3, app, { idleTimeoutMs: IDLE_TIMEOUT_MS, keepOpen: 1 });
  try {
    await Promise.all([1, 2, 3].map(() => clients.query(Prisma.sql`SELECT pg_sleep(0.1)`)));
    expect(await backends(admin, app)).toBe(3);
    // The two beyond keepOpen close (the backends leave pg_stat_activity shortly after the pool ends them).
    let n = 3;
    for (let i = 0; i < 250 && n > 1; i++) {
      await sleep(20);
      n = await backends(admin, app);
    }
    expect(n).toBe(1);
  } finally {
    await clients.close();
  }
});
