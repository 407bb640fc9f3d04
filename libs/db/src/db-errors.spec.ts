// databaseFailure() on errors built the way pg, pg-pool, Node's net module and Prisma's pg driver
// adapter build them (shapes checked against node_modules/pg-protocol, @prisma/adapter-pg's
// convertDriverError and real errors logged from a stopped / full / restarting PostgreSQL).
import { DatabaseError } from 'pg';
import { DriverAdapterError } from '@prisma/driver-adapter-utils';
import { Prisma } from './prisma';
import { DB_PHASE, databaseFailure, isDatabaseUnavailable, isNothingWritten, sqlState } from './db-errors';

function pgError(code: string, message: string, severity = 'FATAL'): DatabaseError {
  const e = new DatabaseError(message, 100, 'error');
  e.code = code;
  e.severity = severity;
  return e;
}

function socketError(code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), {
    errno: -1,
    code,
    syscall,
    address: '127.0.0.1',
    port: 5432,
  });
}

function stamped<T extends object>(e: T, phase: string): T {
  Object.defineProperty(e, DB_PHASE, { value: phase, enumerable: false });
  return e;
}

/** Prisma's error for a raw query the adapter failed (P2010), or for a failed connect/transaction start (P1001). */
function prismaError(cause: ConstructorParameters<typeof DriverAdapterError>[0], code = 'P2010'): Error {
  return new Prisma.PrismaClientKnownRequestError('Raw query failed.', {
    code,
    clientVersion: '7.10.0',
    meta: { driverAdapterError: new DriverAdapterError(cause) },
  });
}

describe('databaseFailure: nothing was written', () => {
  it.each([
    ['connection refused (pg pool connect)', socketError('ECONNREFUSED', 'connect')],
    ['host not found', socketError('ENOTFOUND', 'getaddrinfo')],
    [
      '57P03 the database system is starting up / shutting down',
      pgError('57P03', 'the database system is shutting down'),
    ],
    ['53300 too many connections', pgError('53300', 'sorry, too many clients already')],
    ['08004 server rejected the connection', pgError('08004', 'rejected')],
    [
      'Prisma P2010 with adapter cause DatabaseNotReachable',
      prismaError({ kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 5432 }),
    ],
    [
      'Prisma P1001 (transaction start) with DatabaseNotReachable',
      prismaError({ kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 5432 }, 'P1001'),
    ],
    [
      'Prisma P2010 with adapter cause TooManyConnections',
      prismaError({ kind: 'TooManyConnections', cause: 'sorry, too many clients already' }),
    ],
    [
      'Prisma P2010 wrapping 57P03',
      prismaError({
        kind: 'postgres',
        code: '57P03',
        severity: 'FATAL',
        message: 'the database system is starting up',
        originalCode: '57P03',
        originalMessage: 'x',
        detail: undefined,
        column: undefined,
        hint: undefined,
      }),
    ],
    [
      'pg-pool connect timeout (no code, stamped by the tracked pool)',
      stamped(new Error('timeout exceeded when trying to connect'), 'connect'),
    ],
    [
      'a statement on a session already gone (stamped not-sent)',
      stamped(new Error('Client has encountered a connection error and is not queryable'), 'not-sent'),
    ],
    [
      '57P01 on a session that had already ended',
      stamped(pgError('57P01', 'terminating connection due to administrator command'), 'not-sent'),
    ],
    [
      'a stamped error wrapped as a cause',
      new Error('outer', { cause: stamped(new Error('Connection terminated due to connection timeout'), 'connect') }),
    ],
  ])('%s', (_name, error) => {
    expect(databaseFailure(error)).toBe('unavailable');
    expect(isNothingWritten(error)).toBe(true);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});

describe('databaseFailure: the session died under the statement', () => {
  it.each([
    [
      '57P01 admin shutdown while the statement ran',
      stamped(pgError('57P01', 'terminating connection due to administrator command'), 'in-flight'),
    ],
    [
      '57P01 without a phase (a client error event)',
      pgError('57P01', 'terminating connection due to administrator command'),
    ],
    ['57P02 crash shutdown', pgError('57P02', 'terminating connection because of crash of another server process')],
    ['08006 connection failure', pgError('08006', 'connection failure')],
    ['08007 transaction resolution unknown', pgError('08007', 'transaction resolution unknown')],
    [
      'connection terminated after the statement was sent',
      stamped(new Error('Connection terminated unexpectedly'), 'in-flight'),
    ],
    ['connection reset on an open socket', socketError('ECONNRESET', 'read')],
    [
      'Prisma P2010 wrapping 57P01',
      prismaError({
        kind: 'postgres',
        code: '57P01',
        severity: 'FATAL',
        message: 'terminating',
        originalCode: '57P01',
        originalMessage: 'terminating',
        detail: undefined,
        column: undefined,
        hint: undefined,
      }),
    ],
    ['Prisma P2010 with adapter cause ConnectionClosed', prismaError({ kind: 'ConnectionClosed' })],
    ['Prisma P2010 with adapter cause SocketTimeout', prismaError({ kind: 'SocketTimeout' })],
  ])('%s', (_name, error) => {
    expect(databaseFailure(error)).toBe('outcome_unknown');
    expect(isNothingWritten(error)).toBe(false);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});

describe('databaseFailure: not a database outage', () => {
  it.each([
    ['a unique violation', pgError('23505', 'duplicate key value violates unique constraint "x"', 'ERROR')],
    [
      'statement_timeout (57014): the server cancelled, the session lives',
      pgError('57014', 'canceling statement due to statement timeout', 'ERROR'),
    ],
    [
      'a missing table through Prisma',
      prismaError({
        kind: 'TableDoesNotExist',
        table: 'x',
        originalCode: '42P01',
        originalMessage: 'relation "x" does not exist',
      }),
    ],
    ['a bug', new TypeError('cannot read properties of undefined')],
    [
      'a message that merely mentions a connection problem',
      new Error('Connection terminated unexpectedly; ECONNREFUSED; DatabaseNotReachable'),
    ],
    ['nothing', undefined],
  ])('%s', (_name, error) => {
    expect(databaseFailure(error)).toBeUndefined();
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe('sqlState', () => {
  it('reads the SQLSTATE inside a Prisma error and never returns a Prisma code', () => {
    expect(
      sqlState(
        prismaError({
          kind: 'postgres',
          code: '57P01',
          severity: 'FATAL',
          message: 'm',
          originalCode: '57P01',
          originalMessage: 'm',
          detail: undefined,
          column: undefined,
          hint: undefined,
        }),
      ),
    ).toBe('57P01');
    expect(sqlState(prismaError({ kind: 'DatabaseNotReachable', host: 'h', port: 1 }))).toBeUndefined();
  });
});
