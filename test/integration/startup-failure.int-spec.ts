// The start-up causes from real failures: a real port clash, real PostgreSQL refusals and a real
// kafkajs client that finds no broker; each named with the setting to change (libs/startup).
import { createServer } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { loadConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { explainStartupFailure, listen } from '@tickets/startup';
import { TEST_DATABASE_URL } from '../support/env';

function withDatabase(change: (u: URL) => void): string {
  const u = new URL(TEST_DATABASE_URL);
  change(u);
  return u.toString();
}

async function pgError(url: string): Promise<unknown> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1 FROM tickets_no_such_table');
  } catch (err) {
    return err;
  } finally {
    await c.end().catch(() => undefined);
  }
  throw new Error('expected a failure');
}

describe('explainStartupFailure on real failures', () => {
  it('a taken port: the port, the address and the variable, with 0 as the way out', async () => {
    const taken = createServer();
    await listen(taken, { port: 0, host: '127.0.0.1' });
    const port = (taken.address() as { port: number }).port;
    try {
      const err = await listen(createServer(), { variable: 'NOTIFIER_METRICS_PORT', port, host: '127.0.0.1' }).catch(
        (e: unknown) => e,
      );
      expect((err as Error).message).toBe(
        `port ${port} on 127.0.0.1 is in use (NOTIFIER_METRICS_PORT): stop the other process, or set NOTIFIER_METRICS_PORT to another port, or 0 for any free port`,
      );
      // A library that does not know the variable: the app's context names it by the port.
      const raw = await new Promise<unknown>((resolve) =>
        createServer().once('error', resolve).listen(port, '127.0.0.1'),
      );
      expect(
        explainStartupFailure(raw, { ports: [{ variable: 'RELAY_METRICS_PORT', port, host: '127.0.0.1' }] }),
      ).toEqual({
        cause: 'port_in_use',
        unexpected: false,
        message: expect.stringContaining(`port ${port} on 127.0.0.1 is in use (RELAY_METRICS_PORT)`),
      });
    } finally {
      taken.close();
    }
  });

  it('PostgreSQL: missing database, unknown role, nothing listening, a missing table', async () => {
    const missing = withDatabase((u) => (u.pathname = '/tickets_no_such_database'));
    expect(explainStartupFailure(await pgError(missing), { databaseUrl: missing }).cause).toBe('database_missing');
    const role = withDatabase((u) => (u.username = 'no_such_role'));
    expect(explainStartupFailure(await pgError(role), { databaseUrl: role })).toMatchObject({
      cause: 'database_auth_failed',
      message: expect.stringContaining('(DATABASE_URL)'),
    });
    const closed = withDatabase((u) => (u.port = '1'));
    expect(
      explainStartupFailure(await pgError(closed), { databaseUrl: closed, brokers: ['127.0.0.1:9092'] }),
    ).toMatchObject({
      cause: 'database_unreachable',
      message: expect.stringContaining('cannot reach PostgreSQL at 127.0.0.1:1/'),
    });
    expect(explainStartupFailure(await pgError(TEST_DATABASE_URL), { databaseUrl: TEST_DATABASE_URL }).cause).toBe(
      'database_not_migrated',
    );
  });

  it('PostgreSQL through Prisma: a missing database', async () => {
    const missing = withDatabase((u) => (u.pathname = '/tickets_no_such_database'));
    const prisma = createPrismaClient(missing, 1, 'startup-failure-test');
    const err = await prisma.$queryRaw`SELECT 1`.catch((e: unknown) => e);
    await prisma.$disconnect();
    expect(explainStartupFailure(err, { databaseUrl: missing }).cause).toBe('database_missing');
  });

  it('Kafka: no broker at KAFKA_BROKERS', async () => {
    const kafka = new Kafka({
      clientId: 'startup-failure-test',
      brokers: ['127.0.0.1:1'],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const admin = kafka.admin();
    const err = await admin.connect().catch((e: unknown) => e);
    await admin.disconnect();
    expect(explainStartupFailure(err, { databaseUrl: TEST_DATABASE_URL, brokers: ['127.0.0.1:1'] })).toMatchObject({
      cause: 'broker_unreachable',
      message: expect.stringContaining('cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)'),
    });
  });

  it('invalid configuration, and an error nobody expected (kept, with its stack, for the log)', () => {
    const config = (() => {
      try {
        return loadConfig({ PORT: 'eighty' });
      } catch (e) {
        return e;
      }
    })();
    expect(explainStartupFailure(config).cause).toBe('config_invalid');
    expect(explainStartupFailure(new TypeError('x is not a function'))).toEqual({
      cause: 'unknown',
      unexpected: true,
      message: 'unexpected error: x is not a function',
    });
  });
});
