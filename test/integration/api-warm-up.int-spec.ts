// The API's start warms DB_POOL_WARM connections with its create statement (TicketsRepository at bootstrap,
// through Database and libs/db's Prisma.Sql): read from inside each backend of the API's pool, whose
// pg_backend_memory_contexts hold an "index info" context for every index the create's plan reads.
import { loadConfig } from '@tickets/config';
import { Prisma } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { Database } from '../../apps/ticket-api/src/infra/database';
import { TicketsRepository } from '../../apps/ticket-api/src/tickets/tickets.repository';
import { TEST_DATABASE_URL } from '../support/env';

/**
 * Indexes the create's plan reads: the key guard's and the externalRef lookup's. (outbox_events is only
 * written to: PostgreSQL opens its indexes when the insert runs, not when it is planned.)
 */
const CREATE_INDEXES = ['idempotency_keys_pkey', 'tickets_tenant_id_external_ref_key'];

/** Each of the pool's `n` connections at once (each statement holds its connection in pg_sleep): the indexes it has loaded. */
async function indexesPerConnection(db: Database, n: number): Promise<string[][]> {
  const rows = await Promise.all(
    Array.from({ length: n }, () =>
      db.query<{ idents: string[] }>(Prisma.sql`
        SELECT array(SELECT ident FROM pg_backend_memory_contexts
                      WHERE name = 'index info' AND ident = ANY(${CREATE_INDEXES}::text[]) ORDER BY ident) AS idents
        FROM pg_sleep(0.3)`),
    ),
  );
  return rows.map((r) => r[0].idents);
}

async function startedDatabase(warm: string): Promise<Database> {
  const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL, DB_POOL_MAX: '3', DB_POOL_WARM: warm });
  const db = new Database(config, createLogger('silent', 'api-warm-up-test'));
  await new TicketsRepository(db).onApplicationBootstrap();
  return db;
}

it('opens DB_POOL_WARM connections at start, each with the create statement planned', async () => {
  const db = await startedDatabase('3');
  try {
    expect(await indexesPerConnection(db, 3)).toEqual([CREATE_INDEXES, CREATE_INDEXES, CREATE_INDEXES]);
  } finally {
    await db.onApplicationShutdown();
  }
});

it('warms none with DB_POOL_WARM=0', async () => {
  const db = await startedDatabase('0');
  try {
    expect(await indexesPerConnection(db, 3)).toEqual([[], [], []]);
  } finally {
    await db.onApplicationShutdown();
  }
});
