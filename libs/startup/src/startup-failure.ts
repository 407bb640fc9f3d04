/**
 * Why a process failed to start, read from the error's structure (a Node socket error's `code` and
 * `syscall`, a PostgreSQL SQLSTATE, the driver adapter's `kind`, kafkajs' error names), and said in
 * one line that names the setting to change. Every main.ts ends its start-up failures here, so a
 * port clash is never blamed on PostgreSQL or Kafka again (issue 17).
 */
export type StartupCause =
  | 'port_in_use'
  | 'port_denied'
  | 'address_unavailable'
  | 'database_unreachable'
  | 'database_auth_failed'
  | 'database_missing'
  | 'database_not_migrated'
  | 'broker_unreachable'
  | 'config_invalid'
  | 'unknown';

/** A port the process opens, and the variables that move it. */
export interface PortSetting {
  /** Absent for a library that does not know it (the app's StartupContext then names it). */
  variable?: string;
  port: number;
  host: string;
  /** The variable of the address, when it has one (HOST, ADMIN_HOST ...). */
  hostVariable?: string;
}

export interface StartupContext {
  ports?: PortSetting[];
  databaseUrl?: string;
  brokers?: string[];
}

export interface StartupFailure {
  cause: StartupCause;
  /** One line for a person: what is wrong and what to change. */
  message: string;
  /** Whether the error's stack helps (only for causes this module does not know). */
  unexpected: boolean;
}

type Node = Record<string, unknown>;

/** Every object reachable through `cause`, `errors` (AggregateError), Prisma's `meta.driverAdapterError` and kafkajs' `originalError`. */
function* chain(error: unknown): Generator<Node> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length) {
    const cur = queue.shift();
    if (!cur || typeof cur !== 'object' || seen.has(cur)) continue;
    seen.add(cur);
    const o = cur as Node;
    yield o;
    queue.push(o.cause, (o.meta as Node | undefined)?.driverAdapterError, o.originalError);
    if (Array.isArray(o.errors)) queue.push(...o.errors);
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

const DB_AUTH_STATES = new Set(['28P01', '28000']);
const DB_UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
]);
const DB_UNREACHABLE_STATES = new Set(['57P03', '53300', '08001', '08004', '08006']);

function dbTarget(url: string | undefined): { where: string; port?: number } {
  if (!url) return { where: 'the database' };
  try {
    const u = new URL(url);
    return { where: `${u.hostname}:${u.port || 5432}${u.pathname}`, port: Number(u.port || 5432) };
  } catch {
    return { where: 'the database' };
  }
}

function portsOf(brokers: string[] = []): Set<number> {
  return new Set(brokers.map((b) => Number(b.split(':').pop())).filter((n) => Number.isInteger(n)));
}

/** The cause of `error` and one line that says what to change. */
export function explainStartupFailure(error: unknown, ctx: StartupContext = {}): StartupFailure {
  const nodes = [...chain(error)];
  const db = dbTarget(ctx.databaseUrl);
  const brokers = ctx.brokers?.join(',') ?? 'the brokers';
  const brokerPorts = portsOf(ctx.brokers);
  const known = (cause: StartupCause, message: string): StartupFailure => ({ cause, message, unexpected: false });

  // A port of our own: the listen failed.
  for (const o of nodes) {
    const code = str(o.code);
    const isListen = o.syscall === 'listen' || o.name === 'PortUnavailableError';
    if (!isListen || !code || typeof o.port !== 'number') continue;
    const port = o.port;
    const setting: PortSetting | undefined =
      ctx.ports?.find((p) => o.variable !== undefined && p.variable === o.variable) ??
      ctx.ports?.find((p) => p.port === port && p.variable);
    const host = str(o.address) ?? setting?.host ?? 'localhost';
    const variable = setting?.variable ?? str(o.variable) ?? 'its port setting';
    if (code === 'EADDRINUSE') {
      return known(
        'port_in_use',
        `port ${port} on ${host} is in use (${variable}): stop the other process, or set ${variable} to another port, or 0 for any free port`,
      );
    }
    if (code === 'EACCES' || code === 'EPERM') {
      return known(
        'port_denied',
        `port ${port} on ${host} needs privileges this process does not have (${variable}): set ${variable} to a port above 1023, or 0 for any free port`,
      );
    }
    if (code === 'EADDRNOTAVAIL') {
      const hostVariable = setting?.hostVariable ?? 'the host setting';
      return known(
        'address_unavailable',
        `cannot listen on ${host}:${port}: ${host} is not an address of this host (${hostVariable}): set ${hostVariable} to one of its addresses, e.g. 127.0.0.1`,
      );
    }
  }

  for (const o of nodes) {
    if (o.name === 'ConfigError' || o.name === 'McpConfigError')
      return known('config_invalid', `invalid configuration: ${str(o.message)}`);
  }

  // kafkajs names every error of its own KafkaJS*; the first one in the chain says the broker did not answer.
  const kafka = nodes.find((o) => str(o.name)?.startsWith('KafkaJS'));
  const socket = nodes.find((o) => typeof o.syscall === 'string' && DB_UNREACHABLE_CODES.has(str(o.code) ?? ''));
  const socketIsBroker =
    socket && typeof socket.port === 'number' && brokerPorts.has(socket.port) && socket.port !== db.port;
  if (kafka || socketIsBroker) {
    const detail =
      str(
        nodes.find((o) => str(o.name)?.startsWith('KafkaJS') && o !== kafka && typeof o.message === 'string')?.message,
      ) ??
      str(kafka?.message) ??
      str(socket?.code);
    return known(
      'broker_unreachable',
      `cannot reach Kafka at ${brokers} (KAFKA_BROKERS): ${detail}. Start the broker (npm run kafka:up) or point KAFKA_BROKERS at it`,
    );
  }

  for (const o of nodes) {
    const code = str(o.code) ?? str(o.originalCode);
    const kind = str(o.kind);
    if ((code && DB_AUTH_STATES.has(code)) || kind === 'AuthenticationFailed') {
      return known(
        'database_auth_failed',
        `PostgreSQL at ${db.where} refused the login (DATABASE_URL): ${str(o.message) ?? 'authentication failed'}. Check the user and password in DATABASE_URL`,
      );
    }
    if (code === '3D000' || kind === 'DatabaseDoesNotExist') {
      return known(
        'database_missing',
        `the database ${db.where} does not exist (DATABASE_URL): create it (createdb) and run npm run db:migrate, or fix DATABASE_URL`,
      );
    }
    if (code === '42P01' || code === '3F000' || kind === 'TableDoesNotExist' || o.name === 'MigrationsPendingError') {
      return known(
        'database_not_migrated',
        `the database ${db.where} is not migrated (${str(o.message) ?? 'a table is missing'}): run npm run db:migrate`,
      );
    }
    if (
      (code && (DB_UNREACHABLE_STATES.has(code) || code === 'P1001' || code === 'P1002')) ||
      kind === 'DatabaseNotReachable'
    ) {
      return known(
        'database_unreachable',
        `cannot reach PostgreSQL at ${db.where} (DATABASE_URL): ${str(socket?.code) ?? str(o.message) ?? 'no answer'}. Start PostgreSQL or fix DATABASE_URL`,
      );
    }
  }
  if (socket) {
    return known(
      'database_unreachable',
      `cannot reach PostgreSQL at ${db.where} (DATABASE_URL): ${str(socket.code)}. Start PostgreSQL or fix DATABASE_URL`,
    );
  }
  const top = nodes[0];
  return { cause: 'unknown', message: `unexpected error: ${str(top?.message) ?? String(error)}`, unexpected: true };
}

/**
 * The error of a listen on a port of our own (EADDRINUSE, EACCES, EADDRNOTAVAIL), with the variable
 * that moves the port; its message is the line `explainStartupFailure` gives.
 */
export class PortUnavailableError extends Error {
  override name = 'PortUnavailableError';
  readonly code: string;
  readonly port: number;
  readonly address: string;
  readonly variable?: string;
  constructor(cause: NodeJS.ErrnoException, at: PortSetting) {
    super('', { cause });
    this.code = cause.code ?? 'EADDRINUSE';
    this.port = at.port;
    this.address = at.host;
    this.variable = at.variable;
    this.message = explainStartupFailure(this, { ports: [at] }).message;
  }
}
