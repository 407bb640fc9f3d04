// Warming a pool's connections at start (the kit's warmConnections; the API's DB_POOL_WARM, the kit's
// warmStatements): the connections are opened at once, and each has loaded the catalog the statements need,
// seen from inside the backend (pg_backend_memory_contexts lists an "index info" context per index its
// relation cache holds), without running the statements or leaving anything prepared; a statement that fails
// is reported and skipped, and a table locked by a migration does not hold the start for longer than 2 s.
import { Client, Pool, type PoolClient } from 'pg';
import { warmConnections } from '@tickets/db';
import { TEST_DATABASE_URL } from '../support/env';

/** Reads by a key whose index no other statement here touches; the NULLs of the warm-up would fold a custom plan to nothing. */
const BY_EXTERNAL_REF =
  'SELECT id FROM tickets WHERE $1::text IS NOT NULL AND tenant_id = $2::uuid AND external_ref = $1::text';
const INSERT_TENANT = "INSERT INTO tenants (id, slug) VALUES ($1::uuid, 'warm-up')";

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

  expect(report).toMatchObject({ connections: 3, failed: [] });
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

it('reports a statement that fails, warms the others, and keeps the connections', async () => {
  const pool = newPool(2, 'warm-connections-bad');
  const report = await warmConnections(pool, ['SELECT 1 FROM no_such_table', BY_EXTERNAL_REF], 2);

  expect(report.connections).toBe(2);
  expect(report.failed).toEqual([
    { statement: 0, text: 'SELECT 1 FROM no_such_table', error: 'relation "no_such_table" does not exist' },
  ]);
  expect(pool.totalCount).toBe(2);
  const seen = await allConnections(pool, 2, async (c) => ({
    indexes: await loadedIndexes(c),
    prepared: (await c.query('SELECT name FROM pg_prepared_statements')).rows,
    inTransaction: (await c.query<{ now: Date; stmt: Date }>('SELECT now(), statement_timestamp() AS stmt')).rows[0],
  }));
  for (const s of seen) {
    expect(s.indexes).toContain('tickets_tenant_id_external_ref_key');
    expect(s.prepared).toEqual([]);
    // Not left inside the warm-up's transaction: now() is this statement's own start.
    expect(s.inTransaction.now).toEqual(s.inTransaction.stmt);
  }
});

it('does not run a second statement in the text: the text fails, nothing is written', async () => {
  const pool = newPool(1, 'warm-connections-two');
  const slug = `warm-up-injected-${Date.now()}`;
  const report = await warmConnections(
    pool,
    [`SELECT 1; INSERT INTO tenants (id, slug) VALUES (gen_random_uuid(), '${slug}')`],
    1,
  );

  expect(report.failed).toEqual([
    expect.objectContaining({ statement: 0, error: expect.stringMatching(/multiple commands/) }),
  ]);
  const { rows } = await pool.query('SELECT 1 FROM tenants WHERE slug = $1', [slug]);
  expect(rows).toEqual([]);
});

it('gives up on a table another session holds locked after its lock timeout, instead of waiting for the lock', async () => {
  const holder = new Client({ connectionString: TEST_DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE tickets IN ACCESS EXCLUSIVE MODE');
    const pool = newPool(1, 'warm-connections-locked');
    const report = await warmConnections(pool, [BY_EXTERNAL_REF], 1);
    expect(report.failed).toEqual([
      expect.objectContaining({ statement: 0, error: 'canceling statement due to lock timeout' }),
    ]);
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
});

it('rejects when it cannot connect, and keeps nothing checked out', async () => {
  const pool = new Pool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', max: 2 });
  pools.push(pool);
  await expect(warmConnections(pool, [BY_EXTERNAL_REF], 2)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  expect(pool.totalCount).toBe(0);
});

it('warms at most what the pool has free, rather than wait for connections it or others hold', async () => {
  const pool = newPool(3, 'warm-connections-max');
  const held = await pool.connect();
  try {
    expect((await warmConnections(pool, [BY_EXTERNAL_REF], 5)).connections).toBe(2);
    expect(pool.totalCount).toBe(3);
  } finally {
    held.release();
  }
});

it('opens nothing for zero connections', async () => {
  const pool = newPool(2, 'warm-connections-none');
  expect(await warmConnections(pool, [BY_EXTERNAL_REF], 0)).toEqual({ connections: 0, ms: 0, failed: [] });
  expect(pool.totalCount).toBe(0);
});
