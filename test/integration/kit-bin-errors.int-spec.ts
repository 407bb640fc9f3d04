// The `ticket-events` bin's answers when the broker or the database refuses it: each names where it went and
// what to change, on the real broker address and a real PostgreSQL role.
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
});
