import { sqlState } from './database-errors';

/** in_failed_sql_transaction: what PostgreSQL answers every statement after the one that aborted the transaction. */
const IN_FAILED_TRANSACTION = '25P02';

/** Per connection, the error of the statement that left its transaction aborted, while it is. */
const aborting = new WeakMap<object, unknown>();

type Query = (...args: unknown[]) => unknown;

/**
 * Makes `client` remember the error of the statement that aborted its transaction, for abortingError(). A
 * handler that catches that error leaves PostgreSQL nothing to say at COMMIT but "ROLLBACK": the kit's dead
 * letter would hide the cause (a division by zero, a constraint) behind a TransactionAborted. Remembered: the
 * last error other than 25P02 (every statement after the aborting one fails with 25P02); forgotten when a
 * statement succeeds (a ROLLBACK TO SAVEPOINT ends the aborted state; COMMIT's "ROLLBACK" answer does not).
 * Promise and callback calls are seen; a Submittable (a cursor, a stream) is not. Once per connection.
 */
export function rememberAbortingErrors(client: { query: unknown }): void {
  const original = client.query as Query;
  const noteError = (err: unknown) => {
    if (sqlState(err) !== IN_FAILED_TRANSACTION) aborting.set(client, err);
  };
  const noteResult = (res: unknown) => {
    if ((res as { command?: unknown } | undefined)?.command !== 'ROLLBACK') aborting.delete(client);
  };
  client.query = function query(this: unknown, ...args: unknown[]) {
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: unknown, res: unknown) => {
        if (err) noteError(err);
        else noteResult(res);
        return (callback as (e: unknown, r: unknown) => unknown)(err, res);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (!(result instanceof Promise)) return result;
    return result.then(
      (res: unknown) => {
        noteResult(res);
        return res;
      },
      (err: unknown) => {
        noteError(err);
        throw err;
      },
    );
  };
}

/** The error of the statement that aborted `client`'s transaction, if rememberAbortingErrors saw it. */
export function abortingError(client: object): unknown {
  return aborting.get(client);
}
