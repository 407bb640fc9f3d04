import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../../generated/prisma/client';

export { Prisma, PrismaClient } from '../../../generated/prisma/client';

/** A Prisma client on a `pg` pool of `poolMax` connections (driver adapter, no native engine). */
export function createPrismaClient(url: string, poolMax: number, applicationName = 'tickets'): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: url,
    max: poolMax,
    application_name: applicationName,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  return new PrismaClient({ adapter });
}

/** The PostgreSQL SQLSTATE behind a Prisma or driver error, if there is one. */
export function sqlState(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = error;
  while (cur && typeof cur === 'object' && !seen.has(cur)) {
    seen.add(cur);
    const o = cur as Record<string, unknown>;
    for (const v of [o.code, (o.meta as Record<string, unknown> | undefined)?.code, (o.cause as Record<string, unknown> | undefined)?.originalCode]) {
      if (typeof v === 'string' && /^[0-9A-Z]{5}$/.test(v)) return v;
    }
    cur = o.cause;
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
