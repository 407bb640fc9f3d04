/**
 * What a failed database call means for the caller, read from the error's structure only (SQLSTATE,
 * the driver adapter's `kind`, a Node socket error's `code`/`syscall`, the phase the tracked pool
 * stamped on it), never from message text, which changes between versions and locales.
 *
 * - `unavailable`: nothing reached the server, or the server refused the session before running
 *   anything. Nothing was written; a retry later can help.
 * - `outcome_unknown`: the session died while a statement was on the wire. A read can simply be
 *   retried; a write may or may not have committed, and only a look on a fresh connection can tell.
 */
export type DatabaseFailure = 'unavailable' | 'outcome_unknown';

/**
 * Where a pg error happened, stamped by the tracked pool (tracked-pool.ts): `connect` (getting a
 * session), `not-sent` (the session was already gone when the statement was issued), `in-flight`
 * (the session ended after the statement was written).
 */
export type DatabasePhase = 'connect' | 'not-sent' | 'in-flight';
export const DB_PHASE = 'databasePhase';

/** Refused before anything ran: cannot_connect_now (starting up, shutting down, recovery), too many connections, 08001/08004 (client could not connect / server rejected the connection). */
const REFUSED_STATES = new Set(['57P03', '53300', '08001', '08004']);
/** The session ended under a statement: admin_shutdown, crash_shutdown, idle_session_timeout, connection_exception, connection_does_not_exist, connection_failure, transaction_resolution_unknown. */
const LOST_STATES = new Set(['57P01', '57P02', '57P05', '08000', '08003', '08006', '08007']);
/** @prisma/adapter-pg `kind`s (convertDriverError): the first two only happen while connecting. */
const REFUSED_KINDS = new Set(['DatabaseNotReachable', 'TooManyConnections']);
const LOST_KINDS = new Set(['ConnectionClosed', 'SocketTimeout']);
/** Node socket errors raised while opening the TCP connection or resolving the host. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);
/** Node socket errors on an open connection. */
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);
/** Prisma's own connection codes: can't reach server, timed out, server closed the connection. */
const PRISMA_REFUSED = new Set(['P1001', 'P1002']);
const PRISMA_LOST = new Set(['P1017']);

const SQLSTATE = /^[0-9A-Z]{5}$/;
const PRISMA_CODE = /^P[1-9]\d{3}$/;

/** Every object reachable through `cause`, Prisma's `meta.driverAdapterError` and an AggregateError's `errors`. */
function* chain(error: unknown): Generator<Record<string, unknown>> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length) {
    const cur = queue.shift();
    if (!cur || typeof cur !== 'object' || seen.has(cur)) continue;
    seen.add(cur);
    const o = cur as Record<string, unknown>;
    yield o;
    const meta = o.meta as Record<string, unknown> | undefined;
    queue.push(o.cause, meta?.driverAdapterError);
    if (Array.isArray(o.errors)) queue.push(...o.errors);
  }
}

/**
 * The PostgreSQL SQLSTATE behind a Prisma or driver error, if there is one: a `pg` error's `code`, or,
 * for a Prisma error (e.g. P2010 from $queryRaw), the driver adapter's `originalCode` in its cause or
 * in `meta.driverAdapterError`. Prisma's own codes (P2010 ...) are never returned; PL/pgSQL's
 * P0001-P0004 are real SQLSTATEs and are.
 */
export function sqlState(error: unknown): string | undefined {
  for (const o of chain(error)) {
    const meta = o.meta as Record<string, unknown> | undefined;
    for (const v of [o.code, meta?.code, o.originalCode]) {
      if (typeof v === 'string' && SQLSTATE.test(v) && !PRISMA_CODE.test(v)) return v;
    }
  }
  return undefined;
}

/**
 * Whether (and how) `error` means the database could not serve the call; undefined for every other
 * error (a constraint, a syntax error, a bug), including a session the server ended for a reason of
 * its own such as statement_timeout (57014).
 */
export function databaseFailure(error: unknown): DatabaseFailure | undefined {
  let lost = false;
  for (const o of chain(error)) {
    const phase = o[DB_PHASE];
    if (phase === 'connect' || phase === 'not-sent') return 'unavailable';
    if (phase === 'in-flight') lost = true;
    const kind = o.kind;
    if (typeof kind === 'string') {
      if (REFUSED_KINDS.has(kind)) return 'unavailable';
      if (LOST_KINDS.has(kind)) lost = true;
    }
    const code = o.code;
    if (typeof code === 'string') {
      if (REFUSED_STATES.has(code) || PRISMA_REFUSED.has(code)) return 'unavailable';
      if (LOST_STATES.has(code) || PRISMA_LOST.has(code)) lost = true;
      if (typeof o.syscall === 'string') {
        if (CONNECT_CODES.has(code) || o.syscall === 'connect' || o.syscall === 'getaddrinfo') return 'unavailable';
        if (LOST_CODES.has(code)) lost = true;
      }
    }
    const original = o.originalCode;
    if (typeof original === 'string') {
      if (REFUSED_STATES.has(original)) return 'unavailable';
      if (LOST_STATES.has(original)) lost = true;
    }
  }
  return lost ? 'outcome_unknown' : undefined;
}

/** The database could not serve the call (either kind above): a retry later can help. */
export const isDatabaseUnavailable = (error: unknown): boolean => databaseFailure(error) !== undefined;

/** The call failed before anything reached the server: nothing was written. */
export const isNothingWritten = (error: unknown): boolean => databaseFailure(error) === 'unavailable';

export const isUniqueViolation = (error: unknown): boolean =>
  sqlState(error) === '23505' || /P2002|unique constraint/i.test(String((error as Error)?.message ?? ''));
