import { databaseHost, sslRefusedAdvice } from './database-errors';

/** pg's error for a server that answers "no" to SSL. */
const noSsl = new Error('The server does not support SSL connections');
const setting = 'DATABASE_URL';

describe('sslRefusedAdvice', () => {
  it('names the ssl parameters the URL has, sslcert, sslrootcert and sslkey included', () => {
    expect(sslRefusedAdvice(noSsl, 'postgresql://db/x?sslmode=require', setting)).toBe(
      'PostgreSQL at db:5432/x does not accept SSL connections, and DATABASE_URL asks for them (sslmode=require): remove sslmode=require or use sslmode=disable there, or turn SSL on at the server',
    );
    expect(
      sslRefusedAdvice(noSsl, 'postgresql://db/x?sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/k.pem', setting, 'require'),
    ).toContain('DATABASE_URL asks for them (sslcert=/c.pem, sslkey=/k.pem, sslrootcert=/ca.pem)');
  });

  it('names PGSSLMODE when it asks for SSL and the URL has no ssl parameter', () => {
    expect(sslRefusedAdvice(noSsl, 'postgresql://db/x', setting, 'require')).toBe(
      'PostgreSQL at db:5432/x does not accept SSL connections, and the environment variable PGSSLMODE asks for them (PGSSLMODE=require): unset it or set PGSSLMODE=disable, or turn SSL on at the server',
    );
    expect(sslRefusedAdvice(noSsl, 'postgresql://db/x?ssl=true', setting, 'require')).toContain(
      'DATABASE_URL asks for them (ssl=true)',
    );
    expect(sslRefusedAdvice(new Error('other'), 'postgresql://db/x', setting, 'require')).toBeUndefined();
  });
});

describe('databaseHost', () => {
  it('says a socket as its folder, whichever form pg reads it in', () => {
    expect(databaseHost('postgresql://me:pw@/db?host=/var/run/postgresql')).toBe('/var/run/postgresql:5432/db');
    expect(databaseHost('postgresql:///db?host=/var/run/postgresql&port=5433')).toBe('/var/run/postgresql:5433/db');
    expect(databaseHost('socket:/var/run/postgresql?db=x')).toBe('/var/run/postgresql:5432/x');
    expect(databaseHost('/var/run/postgresql db')).toBe('/var/run/postgresql:5432/db');
    expect(databaseHost('postgresql://me:pw@db:6543/x')).toBe('db:6543/x');
  });
});
