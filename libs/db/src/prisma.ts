import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
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

/** A Prisma client on a `pg` pool of `poolMax` connections (driver adapter, no native engine). */
export function createPrismaClient(url: string, poolMax: number, applicationName = 'tickets'): PrismaClient {
  const adapter = new PrismaPg(
    {
      connectionString: url,
      max: poolMax,
      application_name: applicationName,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
    },
    { statementNameGenerator: statementNames() },
  );
  return new PrismaClient({ adapter });
}

/** Prisma's own error codes (P1001, P2010 ...) have the shape of a SQLSTATE; PL/pgSQL's P0001-P0004 are real ones. */
const PRISMA_CODE = /^P[1-9]\d{3}$/;

/**
 * The PostgreSQL SQLSTATE behind a Prisma or driver error, if there is one: a `pg` error's `code`, or,
 * for a Prisma error (e.g. P2010 from $queryRaw), the driver adapter's `originalCode` in its cause or
 * in `meta.driverAdapterError`.
 */
export function sqlState(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length) {
    const cur = queue.shift();
    if (!cur || typeof cur !== 'object' || seen.has(cur)) continue;
    seen.add(cur);
    const o = cur as Record<string, unknown>;
    const meta = o.meta as Record<string, unknown> | undefined;
    for (const v of [o.code, meta?.code, o.originalCode]) {
      if (typeof v === 'string' && /^[0-9A-Z]{5}$/.test(v) && !PRISMA_CODE.test(v)) return v;
    }
    queue.push(o.cause, meta?.driverAdapterError);
  }
  return undefined;
}

export const isUniqueViolation = (error: unknown): boolean =>
  sqlState(error) === '23505' || /P2002|unique constraint/i.test(String((error as Error)?.message ?? ''));

/** Connection-level failures: the database is down or unreachable, so a retry later can help. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const state = sqlState(error);
  if (state && /^(08|57P)/.test(state)) return true;
  const text = `${(error as Error)?.name ?? ''} ${(error as Error)?.message ?? ''} ${(error as { code?: string })?.code ?? ''}`;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|Connection terminated|timeout exceeded when trying to connect|P1001|P1002|P1017|DatabaseNotReachable|ConnectionClosed/i.test(text);
}
