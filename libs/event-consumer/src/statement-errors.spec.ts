import { abortingError, rememberAbortingErrors } from './statement-errors';

/** A pg error as pg makes it: a SQLSTATE code, no syscall. */
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

/** A connection double whose next answers the test sets: an error, or a result with its command. */
function connection() {
  const answers: Array<Error | { command: string }> = [];
  const client = {
    query: (...args: unknown[]): unknown => {
      const a = answers.shift()!;
      const callback = args[args.length - 1];
      if (typeof callback === 'function') {
        if (a instanceof Error) callback(a);
        else callback(undefined, a);
        return undefined;
      }
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  };
  rememberAbortingErrors(client);
  return { client, answers, query: (...args: unknown[]) => client.query(...args) as Promise<unknown> };
}

describe('rememberAbortingErrors', () => {
  it('keeps the error that aborted the transaction through the 25P02s after it and COMMIT’s ROLLBACK', async () => {
    const { client, answers, query } = connection();
    const zero = pgError('22012', 'division by zero');
    answers.push({ command: 'BEGIN' }, zero, pgError('25P02', 'current transaction is aborted'), {
      command: 'ROLLBACK',
    });
    await query('BEGIN');
    await expect(query('SELECT 1/0')).rejects.toBe(zero); // the caller still gets its error
    await query('SELECT 1').catch(() => undefined);
    expect(await query('COMMIT')).toEqual({ command: 'ROLLBACK' });
    expect(abortingError(client)).toBe(zero);
  });

  it('forgets an error survived by a ROLLBACK TO SAVEPOINT once a statement succeeds, and sees callback calls', async () => {
    const { client, answers, query } = connection();
    answers.push(pgError('23505', 'duplicate key'), { command: 'ROLLBACK' }, { command: 'INSERT' });
    await query('INSERT ...').catch(() => undefined);
    expect(abortingError(client)).toMatchObject({ code: '23505' });
    await query('ROLLBACK TO SAVEPOINT s');
    expect(abortingError(client)).toMatchObject({ code: '23505' }); // a ROLLBACK answer keeps it ...
    await query('INSERT ...');
    expect(abortingError(client)).toBeUndefined(); // ... a statement that succeeds ends the aborted state
    const fk = pgError('23503', 'violates foreign key');
    answers.push(fk);
    await new Promise<void>((resolve) => client.query('INSERT ...', [], () => resolve()));
    expect(abortingError(client)).toBe(fk);
  });
});
