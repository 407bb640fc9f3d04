import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { TrackedPool } from './tracked-pool';
import { PrismaClient } from '../../../generated/prisma/client';

export { Prisma, PrismaClient } from '../../../generated/prisma/client';

const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each distinct SQL text so that `pg` prepares it once per connection and PostgreSQL plans it
 * once, instead of parsing and planning the (large) create statement on every call: measured here,
 * that halves PostgreSQL's CPU per create (bench/create.bench.ts, docs/benchmarks.md). All our query
 * shapes are static; past MAX_NAMED_STATEMENTS distinct texts, new ones run unnamed.
 * Caveat: a migration that changes a table under a running process can fail one cached statement with
 * "cached plan must not change result type"; restart processes after migrating.
 */
function statementNames(): (query: { sql: string }) => string {
  const names = new Map<string, string>();
  return ({ sql }) => {
    let name = names.get(sql);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `q_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
      names.set(sql, name);
    }
    return name as string; // undefined: an unnamed (unprepared) statement
  };
}

/**
 * A Prisma client on a `pg` pool of `poolMax` connections (driver adapter, no native engine). The pool
 * is a TrackedPool, so errors of a lost session say whether the statement was sent (databaseFailure).
 */
export function createPrismaClient(url: string, poolMax: number, applicationName = 'tickets'): PrismaClient {
  const pool = new TrackedPool({
    connectionString: url,
    max: poolMax,
    application_name: applicationName,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  const adapter = new PrismaPg(pool, { statementNameGenerator: statementNames(), disposeExternalPool: true });
  return new PrismaClient({ adapter });
}
