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
 * FIRST error with a SQLSTATE since the last statement that succeeded, other than 25P02: every statement after
 * the aborting one fails too, with 25P02 or with its own syntax error (42601: PostgreSQL parses before it
 * looks at the aborted state), and none of those is the cause. An error without a SQLSTATE is pg's own (a
 * value it cannot convert, "Query read timeout", "Client was closed"): the server did not raise it. Forgotten on any success, a ROLLBACK answer included (ROLLBACK TO SAVEPOINT
 * ends the aborted state; the kit's own ROLLBACK ends the transaction), so read it before sending COMMIT.
 * Promise and callback calls are seen; a Submittable (a cursor, a stream) is not. Once per connection.
 */
export function rememberAbortingErrors(client: { query: unknown }): void {
  const original = client.query as Query;
  const noteError = (err: unknown) => {
    const state = sqlState(err);
    if (state && state !== IN_FAILED_TRANSACTION && !aborting.has(client)) aborting.set(client, err);
  };
  const noteResult = () => aborting.delete(client);
  client.query = function query(this: unknown, ...args: unknown[]) {
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: unknown, res: unknown) => {
        if (err) noteError(err);
        else noteResult();
        return (callback as (e: unknown, r: unknown) => unknown)(err, res);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (!(result instanceof Promise)) return result;
    return result.then(
      (res: unknown) => {
        noteResult();
        return res;
      },
      (err: unknown) => {
        noteError(err);
        throw err;
      },
    );
  };
}

/**
 * The error of the statement that aborted `client`'s transaction, if rememberAbortingErrors saw it. Read it
 * before sending COMMIT: COMMIT's answer (ROLLBACK) is a success, which forgets it.
 */
export function abortingError(client: object): unknown {
  return aborting.get(client);
}
