// The `ticket-events` bin's answers when the broker or the database refuses it: each names where it went and
// what to change, on the real broker address and a real PostgreSQL role (and server, without SSL).
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { main as ticketEvents } from '@tickets/event-consumer/bin/ticket-events';
import { TEST_DATABASE_URL } from '../support/env';

async function run(argv: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await ticketEvents(argv, { out: () => undefined, err: (l) => err.push(l) });
  return { code, err: err.join('\n') };
}

describe('ticket-events bin: errors that say where and what next', () => {
  it('a broker that does not answer is named with the --brokers it was given', async () => {
    const { code, err } = await run([
      'replay',
      '--group',
      `bin-errors-${randomUUID()}`,
      '--from',
      'earliest',
      '--brokers',
      '127.0.0.1:1',
      '--database-url',
      TEST_DATABASE_URL,
    ]);
    expect(code).not.toBe(0);
    expect(err).toMatch(/Kafka at 127\.0\.0\.1:1 failed \(KafkaJS.*check --brokers \/ KAFKA_BROKERS/);
  });

  it('migrate as a role without CREATE says which privilege it needs', async () => {
    const admin = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    const role = `kit_no_create_${randomUUID().slice(0, 8)}`;
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    try {
      const url = new URL(TEST_DATABASE_URL);
      url.username = role;
      const { code, err } = await run(['migrate', '--database-url', url.toString(), '--schema', `kit_${role}`]);
      expect(code).not.toBe(0);
      expect(err).toMatch(
        /permission denied .*\(42501, at .*\): .*`ticket-events migrate` needs CREATE on the database/,
      );
    } finally {
      await admin.query(`DROP ROLE ${role}`);
      await admin.end();
    }
  });

  it('wrong usage exits 2 and says how to fix it: a stray argument, a bad schema name, a partition that starts with a dash', async () => {
    const stray = await run(['migrate', 'extra-arg', '--database-url', TEST_DATABASE_URL]);
    expect(stray).toEqual({
      code: 2,
      err: expect.stringContaining('migrate takes no positional arguments (got "extra-arg")'),
    });
    const schema = await run(['migrate', '--schema', 'Bad-Name', '--database-url', TEST_DATABASE_URL]);
    expect(schema.code).toBe(2);
    expect(schema.err).toContain('--schema / EVENT_CONSUMER_SCHEMA: schema "Bad-Name" is not a valid schema name');
    const dash = await run(['replay', '--group', 'g', '--from', 'earliest', '--partition', '-1']);
    expect(dash.code).toBe(2);
    expect(dash.err).toContain(
      "argument is ambiguous. Did you forget to specify the option argument for '--partition'?",
    );
    expect(dash.err).not.toContain('..');
  });

  it('a database URL that is not a postgresql:// URL is wrong usage; SSL the server does not offer says what to change', async () => {
    const notUrl = await run(['dead-letters', 'list', '--group', 'g', '--database-url', 'not-a-url']);
    expect(notUrl).toEqual({
      code: 2,
      err: expect.stringContaining(
        '--database-url / DATABASE_URL must be a postgresql:// URL, e.g. postgresql://user:password@host:5432/database; what was given has no scheme, and pg would read it relative to postgres://base: host "base", the text as a database name',
      ),
    });
    // The test server runs without SSL.
    const url = new URL(TEST_DATABASE_URL);
    url.searchParams.set('sslmode', 'require');
    const ssl = await run(['dead-letters', 'list', '--group', 'g', '--database-url', url.toString()]);
    expect(ssl.code).toBe(1);
    expect(ssl.err).toContain(
      `cannot use PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname} does not accept SSL connections, and --database-url / DATABASE_URL asks for them (sslmode=require): remove sslmode=require or use sslmode=disable there, or turn SSL on at the server`,
    );
  });

  it("a schema without the kit's tables asks whether --schema is right before suggesting migrate", async () => {
    const { code, err } = await run([
      'dead-letters',
      'list',
      '--group',
      'g',
      '--schema',
      'kit_no_such_schema',
      '--database-url',
      TEST_DATABASE_URL,
    ]);
    expect(code).toBe(1);
    expect(err).toMatch(
      /the kit's tables are not in schema kit_no_such_schema of .*\. Check --schema \/ EVENT_CONSUMER_SCHEMA and --database-url \/ DATABASE_URL; if they are right, create the tables with `ticket-events migrate --schema kit_no_such_schema`/,
    );
  });
});
