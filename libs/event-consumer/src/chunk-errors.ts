import { isDatabaseUnavailable, sqlState } from './database-errors';
import type { KitHandlerError } from './decorators';

/**
 * PostgreSQL answered a chunk's COMMIT with ROLLBACK and no error: a statement in the transaction failed
 * and the handler caught its error. Nothing of the chunk was applied, so it fails like a handler that threw.
 */
export class TransactionAborted extends Error {
  override name = 'TransactionAborted';

  /** `first`: the error of the statement that aborted the transaction, when the kit saw it (statement-errors.ts). */
  constructor(first?: unknown) {
    const state = sqlState(first);
    // pg's errors are all named "error": the SQLSTATE and the message say it.
    const said = first instanceof Error ? first.message : errorText(first);
    const failed = first === undefined ? '' : ` (${state ? `${state} ` : ''}${said})`;
    super(
      `PostgreSQL rolled the transaction back at COMMIT: a statement in it failed${failed} and the handler caught the error, ` +
        'which leaves the transaction aborted (nothing of the chunk was applied). Run a statement whose error the ' +
        'handler means to survive inside a SAVEPOINT (SAVEPOINT s; the statement; on its error ROLLBACK TO SAVEPOINT s), ' +
        'or let the error propagate',
      first === undefined ? undefined : { cause: first },
    );
  }
}

export function errorText(err: unknown): string {
  const e = unwrap(err);
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return typeof e === 'string' ? e : JSON.stringify(e);
}

/** The handler's own error when it came through Nest's exception filter (see decorators.ts). */
export function unwrap(err: unknown): unknown {
  return err && typeof err === 'object' && 'kitError' in err ? (err as KitHandlerError).kitError : err;
}

/** An outage is not the event's fault: no retry count, no dead letter; kafkajs re-runs the batch later. */
export function databaseDown(err: unknown): boolean {
  return isDatabaseUnavailable(unwrap(err));
}

/** Errors of Kafka's side of a chunk, recognised by identity: kafkajs gets them back as they are. */
const kafkaErrors = new WeakSet<object>();

/** `control` whose heartbeat errors (REBALANCE_IN_PROGRESS, a lost coordinator ...) are known as Kafka's. */
export function watchedControl(control: ChunkControl): ChunkControl {
  return {
    abandoned: () => control.abandoned(),
    heartbeat: () =>
      control.heartbeat().catch((err: unknown) => {
        if (err && typeof err === 'object') kafkaErrors.add(err);
        throw err;
      }),
  };
}

/**
 * The membership changed or failed under the chunk (a heartbeat's error): not the event's fault. No retry
 * count, no dead letter; kafkajs gets the error, rejoins the group and the chunk is read again.
 */
export function kafkaFailure(err: unknown): boolean {
  return !!err && typeof err === 'object' && kafkaErrors.has(err);
}

/** Kafka's side of a chunk: keep the membership alive, and learn when to stop. */
export interface ChunkControl {
  heartbeat(): Promise<void>;
  /** The partition was revoked or the consumer is stopping: abandon, commit nothing more. */
  abandoned(): boolean;
}
