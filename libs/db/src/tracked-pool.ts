import { Client, Pool, type PoolClient, type PoolConfig } from 'pg';
import { DB_PHASE, type DatabasePhase } from './db-errors';

/**
 * Several of pg's own errors carry no code at all ("timeout exceeded when trying to connect",
 * "Connection terminated unexpectedly", "Client has encountered a connection error and is not
 * queryable"), so only where they happened tells whether a statement could have run. These classes
 * stamp that phase on the error (a non-enumerable `databasePhase`) for databaseFailure() to read.
 * Errors that already carry a kind, a SQLSTATE or a socket code keep them; the phase only adds to it.
 */
function stamp(error: unknown, phase: DatabasePhase): unknown {
  if (error && typeof error === 'object' && !Object.prototype.hasOwnProperty.call(error, DB_PHASE)) {
    Object.defineProperty(error, DB_PHASE, { value: phase, enumerable: false, configurable: true });
  }
  return error;
}

type Callback = (err: Error | undefined, res?: unknown) => void;

/** A pg Client that knows whether its session had already ended when a statement was issued. */
export class TrackedClient extends Client {
  private ended = false;

  constructor(config?: ConstructorParameters<typeof Client>[0]) {
    super(config);
    // pg emits 'error' when the session breaks (a socket error, or a FATAL with no statement running)
    // and 'end' when it closes; after either, nothing written to it reaches a backend.
    this.on('end', () => (this.ended = true));
    this.on('error', () => (this.ended = true));
  }

  override query(...args: unknown[]): never {
    const first = args[0] as { submit?: unknown } | undefined;
    // Submittables (cursors, streams) report through their own events: leave them as they are.
    if (first && typeof first === 'object' && typeof first.submit === 'function')
      return (super.query as (...a: unknown[]) => never)(...args);
    const phase: DatabasePhase = this.ended ? 'not-sent' : 'in-flight';
    // Only errors of a session that is gone are stamped: a statement error on a live session is not a phase question.
    const mark = (err: unknown) => (this.ended || lostState(err) ? stamp(err, phase) : err);
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      const cb = last as Callback;
      args[args.length - 1] = (err: Error | undefined, res?: unknown) => cb(err ? (mark(err) as Error) : err, res);
      return (super.query as (...a: unknown[]) => never)(...args);
    }
    const result = (super.query as (...a: unknown[]) => Promise<unknown>)(...args);
    return result.catch((err: unknown) => {
      throw mark(err);
    }) as never;
  }
}

/** Session-ending SQLSTATEs (57P01 admin shutdown, 57P02 crash shutdown, 57P05 idle session timeout). */
const lostState = (err: unknown): boolean => {
  const code = (err as { code?: unknown })?.code;
  return code === '57P01' || code === '57P02' || code === '57P05';
};

/**
 * A pg Pool of TrackedClients whose connect errors say that nothing was sent. An idle connection the
 * server closes (a restart, pg_terminate_backend, DROP DATABASE ... WITH (FORCE)) makes a pg Pool emit
 * 'error', which crashes the process when nobody listens; this pool always listens (pg has already
 * dropped that client, the next checkout opens a new one) and passes the error to `onIdleError`.
 */
export class TrackedPool extends Pool {
  constructor(config: PoolConfig = {}, onIdleError: (err: Error) => void = () => undefined) {
    super({ ...config, Client: TrackedClient } as PoolConfig);
    this.on('error', onIdleError);
  }

  override connect(): Promise<PoolClient>;
  override connect(
    callback: (err: Error | undefined, client: PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): void;
  override connect(
    callback?: (err: Error | undefined, client: PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): Promise<PoolClient> | void {
    if (callback) {
      return super.connect((err, client, done) => callback(err ? (stamp(err, 'connect') as Error) : err, client, done));
    }
    return super.connect().catch((err: unknown) => {
      throw stamp(err, 'connect');
    });
  }
}
