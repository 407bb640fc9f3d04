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

const caught = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

it('finds the SQLSTATE inside a Prisma raw-query error, not Prisma\'s own P2010', async () => {
  const missing = await caught(prisma.$queryRaw`SELECT 1 FROM no_such_table_here`);
  expect((missing as { code?: string }).code).toBe('P2010');
  expect(sqlState(missing)).toBe('42P01');

  const divided = await caught(prisma.$queryRaw`SELECT 1/0`);
  expect(sqlState(divided)).toBe('22012'); // division_by_zero
});

it('reads a pg error\'s own code', async () => {
  const fromPg = await caught(pool.query('CREATE TEMP TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (1)'));
  expect(sqlState(fromPg)).toBe('23505');
  expect(isUniqueViolation(fromPg)).toBe(true);
});
