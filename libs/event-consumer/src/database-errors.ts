import { readConnectionUrl } from './connection-string';
/**
 * Whether a `pg` error means the database could not serve the call (an outage: no retry count, no
 * dead letter), read from the error's structure only (SQLSTATE, a Node socket error's code/syscall),
 * never from message text. The kit talks to PostgreSQL through `pg` only, so this is the pg subset of
 * the ticket service's classification (libs/db).
 */

/** Refused before anything ran: cannot_connect_now, too_many_connections, 08001/08004. */
const REFUSED_STATES = new Set(['57P03', '53300', '08001', '08004']);
/** The session ended under a statement: admin/crash shutdown, idle_session_timeout, connection_exception family. */
const LOST_STATES = new Set(['57P01', '57P02', '57P05', '08000', '08003', '08006', '08007']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);
const SQLSTATE = /^[0-9A-Z]{5}$/;

function* chain(error: unknown): Generator<Record<string, unknown>> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length) {
    const cur = queue.shift();
    if (!cur || typeof cur !== 'object' || seen.has(cur)) continue;
    seen.add(cur);
    const o = cur as Record<string, unknown>;
    yield o;
    queue.push(o.cause);
    if (Array.isArray(o.errors)) queue.push(...o.errors);
  }
}

/** The PostgreSQL SQLSTATE of a pg error (or of one in its cause chain), if any. */
export function sqlState(error: unknown): string | undefined {
  for (const o of chain(error)) if (typeof o.code === 'string' && SQLSTATE.test(o.code) && !o.syscall) return o.code;
  return undefined;
}

/** The database could not serve the call (refused, unreachable, or the session died under it): a retry later can help. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const o of chain(error)) {
    const code = o.code;
    if (typeof code !== 'string') continue;
    if (REFUSED_STATES.has(code) || LOST_STATES.has(code)) return true;
    if (
      typeof o.syscall === 'string' &&
      (CONNECT_CODES.has(code) || LOST_CODES.has(code) || o.syscall === 'connect' || o.syscall === 'getaddrinfo')
    )
      return true;
  }
  return false;
}

/** SQLSTATEs of a connection PostgreSQL refuses at login: no such database, a wrong password, a role not allowed in. */
const LOGIN_STATES = new Set(['3D000', '28P01', '28000']);

/** The consumer could not reach, or log in to, its database at start. `cause` is the `pg` error. */
export class KitDatabaseUnavailable extends Error {
  override name = 'KitDatabaseUnavailable';
}

/**
 * pg's error for a server that answers "no" to SSL. It has no code or SQLSTATE (the server sends one byte,
 * not an error message), so its text is all there is to recognise it by.
 */
const NO_SSL = 'The server does not support SSL connections';

/** The connection-string parameters that make pg use SSL (pg-connection-string). */
const SSL_PARAMS = ['sslmode', 'ssl', 'sslcert', 'sslkey', 'sslrootcert', 'sslnegotiation'];

/**
 * The server refused SSL that the connection asked for: what to change, said for `setting` (what sets the
 * URL). `pgSslMode`: the PGSSLMODE variable, which pg reads itself when the URL has no ssl parameter; the
 * caller reads it (the environment is read in ticket-events.env.ts only).
 */
export function sslRefusedAdvice(
  err: unknown,
  databaseUrl: string,
  setting: string,
  pgSslMode?: string,
): string | undefined {
  if ((err as { message?: unknown } | null)?.message !== NO_SSL) return undefined;
  const q = connectionParts(databaseUrl)?.params;
  const asked = SSL_PARAMS.flatMap((k) => (q?.has(k) ? [`${k}=${q.get(k)}`] : [])).join(', ');
  const at = `PostgreSQL at ${databaseHost(databaseUrl)} does not accept SSL connections`;
  if (asked === '' && pgSslMode)
    return `${at}, and the environment variable PGSSLMODE asks for them (PGSSLMODE=${pgSslMode}): unset it or set PGSSLMODE=disable, or turn SSL on at the server`;
  const said = asked || 'SSL';
  return `${at}, and ${setting} asks for them (${said}): remove ${said} or use sslmode=disable there, or turn SSL on at the server`;
}

/**
 * A start-up error of the kit's first statement, said as what to check when the database cannot be reached or
 * refuses the login (the server down, a wrong host, port, database, role or password) or SSL; any other error as it is.
 * `pgSslMode`: as for sslRefusedAdvice.
 */
export function startupDatabaseError(err: unknown, databaseUrl: string, pgSslMode?: string): unknown {
  const ssl = sslRefusedAdvice(err, databaseUrl, 'its databaseUrl option (DATABASE_URL)', pgSslMode);
  if (ssl) return new KitDatabaseUnavailable(`the consumer kit cannot use ${ssl}`, { cause: err });
  const state = sqlState(err);
  if (!isDatabaseUnavailable(err) && !(state && LOGIN_STATES.has(state))) return err;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? `${e.code}: ` : '';
  // A host name with two addresses (localhost: ::1 and 127.0.0.1) fails as an AggregateError with an empty
  // message; its attempts say what happened.
  const attempts = Array.isArray(e.errors) ? e.errors.map((x) => String((x as Error)?.message ?? x)) : [];
  const said = typeof e.message === 'string' && e.message !== '' ? e.message : attempts.join('; ') || String(err);
  return new KitDatabaseUnavailable(
    `the consumer kit cannot use PostgreSQL at ${databaseHost(databaseUrl)} (${code}${said}): check its databaseUrl option (DATABASE_URL), and that the server is up and the database and role exist`,
    { cause: err },
  );
}

/** A connection string's parts, read as pg-connection-string reads them, or undefined when it does not parse. */
function connectionParts(
  url: string,
): { host: string; port: string; database: string; params: URLSearchParams } | undefined {
  if (url.startsWith('/')) {
    const [host, database = ''] = url.split(' ');
    return { host, port: '', database, params: new URLSearchParams() };
  }
  const read = readConnectionUrl(url, 'postgres://base');
  if (!read) return undefined;
  const u = read.u;
  const params = u.searchParams;
  if (u.protocol === 'socket:')
    return { host: decodeURI(u.pathname), port: '', database: params.get('db') ?? '', params };
  const hostname = read.dummy ? '' : decodeURIComponent(u.hostname);
  return {
    host: params.get('host') ?? hostname,
    port: params.get('port') ?? u.port,
    database: decodeURI(u.pathname.slice(1)),
    params,
  };
}

/** host:port/database of a connection string (a socket as its folder: /var/run/postgresql:5432/db), without the user or password (for messages). */
export function databaseHost(url: string): string {
  const p = connectionParts(url);
  if (!p) return 'the database';
  return `${p.host || 'localhost'}:${p.port || 5432}/${p.database}`;
}
