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
  it('keeps the error that aborted the transaction through the 25P02s after it; COMMIT’s ROLLBACK forgets it', async () => {
    const { client, answers, query } = connection();
    const zero = pgError('22012', 'division by zero');
    answers.push({ command: 'BEGIN' }, zero, pgError('25P02', 'current transaction is aborted'), {
      command: 'ROLLBACK',
    });
    await query('BEGIN');
    await expect(query('SELECT 1/0')).rejects.toBe(zero); // the caller still gets its error
    await query('SELECT 1').catch(() => undefined);
    expect(abortingError(client)).toBe(zero); // read here, before COMMIT ...
    expect(await query('COMMIT')).toEqual({ command: 'ROLLBACK' });
    expect(abortingError(client)).toBeUndefined(); // ... as COMMIT's answer ends the transaction
  });

  it('keeps the first error: a later syntax error (42601 comes before 25P02) does not replace the cause', async () => {
    const { client, answers, query } = connection();
    const zero = pgError('22012', 'division by zero');
    answers.push(zero, pgError('42601', 'syntax error at or near "SELEC"'));
    await query('SELECT 1/0').catch(() => undefined);
    await query('SELEC 1').catch(() => undefined);
    expect(abortingError(client)).toBe(zero);
  });

  it('ignores errors without a SQLSTATE (pg’s own: a timeout, a closed client, a value it cannot convert)', async () => {
    const { client, answers, query } = connection();
    const zero = pgError('22012', 'division by zero');
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    answers.push(new Error('Query read timeout'), zero, new Error('Client was closed and is not queryable'), reset);
    await query('SELECT pg_sleep(10)').catch(() => undefined);
    expect(abortingError(client)).toBeUndefined();
    await query('SELECT 1/0').catch(() => undefined);
    await query('SELECT 1').catch(() => undefined);
    await query('SELECT 1').catch(() => undefined);
    expect(abortingError(client)).toBe(zero);
  });

  it('forgets an error on a ROLLBACK answer: ROLLBACK TO SAVEPOINT, or the kit’s ROLLBACK after a handler threw', async () => {
    const { client, answers, query } = connection();
    answers.push(pgError('23505', 'duplicate key'), { command: 'ROLLBACK' });
    await query('INSERT ...').catch(() => undefined);
    expect(abortingError(client)).toMatchObject({ code: '23505' });
    await query('ROLLBACK TO SAVEPOINT s');
    expect(abortingError(client)).toBeUndefined(); // recovered: a later abort is named by its own error
    const fk = pgError('23503', 'violates foreign key');
    answers.push(fk, { command: 'ROLLBACK' });
    await query('INSERT ...').catch(() => undefined);
    expect(abortingError(client)).toBe(fk);
    await query('ROLLBACK'); // the connection goes back to the pool idle, remembering nothing
    expect(abortingError(client)).toBeUndefined();
  });

  it('sees callback calls', async () => {
    const { client, answers } = connection();
    const fk = pgError('23503', 'violates foreign key');
    answers.push(fk, { command: 'ROLLBACK' });
    await new Promise<void>((resolve) => client.query('INSERT ...', [], () => resolve()));
    expect(abortingError(client)).toBe(fk);
    await new Promise<void>((resolve) => client.query('ROLLBACK', [], () => resolve()));
    expect(abortingError(client)).toBeUndefined();
  });
});
