// sqlState() against real errors from Prisma's $queryRaw (P2010 wraps the SQLSTATE) and from pg.
import { Pool } from 'pg';
import { createPrismaClient, isUniqueViolation, sqlState, type PrismaClient } from '@tickets/db';
import { TEST_DATABASE_URL } from '../support/env';

let prisma: PrismaClient;
let pool: Pool;

beforeAll(() => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 1, 'db-errors-it');
  pool = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
});
afterAll(async () => {
  await prisma.$disconnect();
  await pool.end();
});

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

it("finds the SQLSTATE inside a Prisma raw-query error, not Prisma's own P2010", async () => {
  const missing = await caught(prisma.$queryRaw`SELECT 1 FROM no_such_table_here`);
  expect((missing as { code?: string }).code).toBe('P2010');
  expect(sqlState(missing)).toBe('42P01');

  const divided = await caught(prisma.$queryRaw`SELECT 1/0`);
  expect(sqlState(divided)).toBe('22012'); // division_by_zero
});

it("reads a pg error's own code", async () => {
  const fromPg = await caught(pool.query('CREATE TEMP TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (1)'));
  expect(sqlState(fromPg)).toBe('23505');
  expect(isUniqueViolation(fromPg)).toBe(true);
});

it('an idle connection the server closes does not crash the process, whether Prisma or the one-statement path used it first', async () => {
  const admin = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
  const { createDatabaseClients, Prisma } = await import('@tickets/db');
  try {
    for (const first of ['query', 'prisma'] as const) {
      const app = `db-errors-idle-${first}`;
      const closed: Error[] = [];
      const clients = createDatabaseClients(TEST_DATABASE_URL, 1, app, { onIdleError: (err) => closed.push(err) });
      try {
        // Before Prisma has connected, its adapter has put no listener on the pool: only the pool's own one catches the error.
        if (first === 'query') await clients.query(Prisma.sql`SELECT 1`);
        else await clients.prisma.$queryRaw`SELECT 1`;
        const { rows } = await admin.query(
          'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
          [app],
        );
        expect(rows).toEqual([{ ok: true }]);
        for (let i = 0; i < 100 && closed.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        expect(closed.map((e) => (e as { code?: string }).code)).toEqual(['57P01']);
        // The next statement opens a new connection.
        expect(await clients.query<{ n: number }>(Prisma.sql`SELECT 2 AS n`)).toEqual([{ n: 2 }]);
      } finally {
        await clients.close();
      }
    }
  } finally {
    await admin.end();
  }
});
