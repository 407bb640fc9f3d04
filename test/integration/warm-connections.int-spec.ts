// Warming a pool's connections at start (libs/db warmConnections, the API's DB_POOL_WARM): the connections are
// opened at once, and each has loaded the catalog the statements need, seen from inside the backend
// (pg_backend_memory_contexts lists an "index info" context per index its relation cache holds), without
// running the statements or leaving anything prepared.
import { Pool, type PoolClient } from 'pg';
import { warmConnections } from '@tickets/db';
import { TEST_DATABASE_URL } from '../support/env';

/** Reads by a key whose index no other statement here touches; the NULLs of the warm-up would fold a custom plan to nothing. */
const BY_EXTERNAL_REF = {
  text: 'SELECT id FROM tickets WHERE $1::text IS NOT NULL AND tenant_id = $2::uuid AND external_ref = $1::text',
  params: 2,
};
const INSERT_TENANT = { text: "INSERT INTO tenants (id, slug) VALUES ($1::uuid, 'warm-up')", params: 1 };

async function loadedIndexes(client: PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ ident: string }>(
    "SELECT ident FROM pg_backend_memory_contexts WHERE name = 'index info' AND ident LIKE 'tickets%'",
  );
  return rows.map((r) => r.ident);
}

async function allConnections<T>(pool: Pool, n: number, read: (c: PoolClient) => Promise<T>): Promise<T[]> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  try {
    return await Promise.all(clients.map(read));
  } finally {
    clients.forEach((c) => c.release());
  }
}

const pools: Pool[] = [];
const newPool = (max: number, app: string) => {
  const pool = new Pool({ connectionString: TEST_DATABASE_URL, max, min: max, application_name: app });
  pools.push(pool);
  return pool;
};
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

it('opens the connections at once, each with the catalog of what the statements read loaded, and runs nothing', async () => {
  const pool = newPool(3, 'warm-connections-catalog');
  const { rows: before } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');

  const report = await warmConnections(pool, [BY_EXTERNAL_REF, INSERT_TENANT], 3);

  expect(report.connections).toBe(3);
  expect(pool.totalCount).toBe(3);
  expect(pool.idleCount).toBe(3);
  const seen = await allConnections(pool, 3, async (c) => ({
    indexes: await loadedIndexes(c),
    prepared: (await c.query('SELECT name FROM pg_prepared_statements')).rows,
    pid: (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid,
  }));
  expect(new Set(seen.map((s) => s.pid)).size).toBe(3); // three backends, not one connection reused
  for (const s of seen) {
    expect(s.indexes).toContain('tickets_tenant_id_external_ref_key');
    expect(s.prepared).toEqual([]);
  }
  const { rows: after } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');
  expect(after).toEqual(before);
});

it('a connection it did not warm has none of that catalog loaded (what the first test reads is the warm-up)', async () => {
  const pool = newPool(1, 'warm-connections-cold');
  const [indexes] = await allConnections(pool, 1, loadedIndexes);
  expect(indexes).not.toContain('tickets_tenant_id_external_ref_key');
});

it('rejects with the database error when a statement does not parse, and keeps no connection checked out', async () => {
  const pool = newPool(2, 'warm-connections-bad');
  await expect(warmConnections(pool, [{ text: 'SELECT 1 FROM no_such_table', params: 0 }], 2)).rejects.toMatchObject({
    code: '42P01',
  });
  // The failed connections were closed, not handed back in an unknown state; the pool still serves.
  expect(pool.totalCount - pool.idleCount).toBe(0);
  const [prepared] = await allConnections(
    pool,
    2,
    async (c) => (await c.query('SELECT name FROM pg_prepared_statements')).rows,
  );
  expect(prepared).toEqual([]);
});

it("warms at most the pool's max, rather than wait for a connection it holds itself", async () => {
  const pool = newPool(2, 'warm-connections-max');
  expect((await warmConnections(pool, [BY_EXTERNAL_REF], 5)).connections).toBe(2);
  expect(pool.totalCount).toBe(2);
});

it('opens nothing for zero connections', async () => {
  const pool = newPool(2, 'warm-connections-none');
  expect(await warmConnections(pool, [BY_EXTERNAL_REF], 0)).toEqual({ connections: 0, ms: 0 });
  expect(pool.totalCount).toBe(0);
});
