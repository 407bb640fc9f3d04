// The kit opens its partitions' connections at start with the inbox statement and the handlers' own hot
// statements (`warmStatements`) parsed and planned on each: read from inside each backend of the kit's pool
// (pg_backend_memory_contexts lists an "index info" context per index its relation cache holds). A warm
// statement that does not parse is logged and the consumer still starts and consumes. Real broker and PostgreSQL.
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import { Pool, type PoolClient } from 'pg';
import type { KitLogger } from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

/** A table of this test only: nothing but the warm-up reads it, so its index in a backend's cache is the warm-up's. */
const OWN_DDL = 'CREATE TABLE IF NOT EXISTS kit_warm_up_test (id uuid PRIMARY KEY)';
const OWN_STATEMENT = 'SELECT id FROM kit_warm_up_test WHERE id = $1::uuid';

async function loaded(client: PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ ident: string }>(
    "SELECT ident FROM pg_backend_memory_contexts WHERE name = 'index info' AND ident IN ('kit_warm_up_test_pkey', 'inbox_events_pkey')",
  );
  return rows.map((r) => r.ident).sort();
}

function capturingLogger(warnings: string[]): KitLogger {
  const none = () => undefined;
  const log = {
    debug: none,
    info: none,
    error: none,
    warn: (obj: unknown, msg?: string) =>
      void warnings.push(
        `${msg ?? ''} ${JSON.stringify(obj, (_k, v: unknown) => (v instanceof Error ? v.message : v))}`,
      ),
    child: () => log,
  };
  return log as unknown as KitLogger;
}

describe('event consumer kit: connections warmed at start', () => {
  const topic = uniqueName('kit-warm-up');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  const started: Array<{ app: INestMicroservice; groupId: string }> = [];

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    await db.query(OWN_DDL);
    fx = await kafkaFixture(topic, 2);
  });

  afterAll(async () => {
    for (const { app, groupId } of started) {
      await app.close();
      await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [groupId]);
      await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    }
    await db.end();
    await fx?.close();
  });

  it('has the inbox statement and warmStatements planned on partitionsConcurrency connections before the first fetch', async () => {
    const groupId = uniqueName('kit-warm-up-group');
    const consumer = await startExample(
      kitOptions(topic, groupId, { partitionsConcurrency: 2, warmStatements: [OWN_STATEMENT] }),
    );
    started.push({ app: consumer.app, groupId });

    // Every connection the pool may hold (its max: partitionsConcurrency + 1), at once: each is a backend of its own.
    const pool = (consumer.server as unknown as { pool: Pool }).pool;
    const clients = await Promise.all([1, 2, 3].map(() => pool.connect()));
    try {
      const seen = await Promise.all(clients.map(loaded));
      const warmed = seen.filter((s) => s.length === 2);
      expect(warmed).toHaveLength(2);
      expect(warmed[0]).toEqual(['inbox_events_pkey', 'kit_warm_up_test_pkey']);
    } finally {
      clients.forEach((c) => c.release());
    }
  });

  it('warms none with warmConnections: 0', async () => {
    const groupId = uniqueName('kit-warm-up-none');
    const consumer = await startExample(
      kitOptions(topic, groupId, { partitionsConcurrency: 2, warmConnections: 0, warmStatements: [OWN_STATEMENT] }),
    );
    started.push({ app: consumer.app, groupId });
    const pool = (consumer.server as unknown as { pool: Pool }).pool;
    const clients = await Promise.all([1, 2, 3].map(() => pool.connect()));
    try {
      const seen = await Promise.all(clients.map(loaded));
      expect(seen.flat()).not.toContain('kit_warm_up_test_pkey');
    } finally {
      clients.forEach((c) => c.release());
    }
  });

  it('starts and consumes when a warm statement does not parse, says which in a warning, and warms the rest', async () => {
    const groupId = uniqueName('kit-warm-up-bad');
    const warnings: string[] = [];
    const consumer = await startExample(
      kitOptions(topic, groupId, {
        warmStatements: ['SELECT 1 FROM kit_warm_up_no_such_table', OWN_STATEMENT],
        logger: capturingLogger(warnings),
      }),
    );
    started.push({ app: consumer.app, groupId });
    expect(warnings.join('\n')).toMatch(
      /a warmStatements entry could not be planned.*"warmStatement":0.*kit_warm_up_no_such_table/,
    );
    // The other statements are warm all the same.
    const pool = (consumer.server as unknown as { pool: Pool }).pool;
    const clients = await Promise.all([1, 2, 3].map(() => pool.connect()));
    try {
      const seen = await Promise.all(clients.map(loaded));
      expect(seen.filter((s) => s.length === 2)).toHaveLength(2);
    } finally {
      clients.forEach((c) => c.release());
    }

    const event = ticketCreated(randomUUID());
    await fx.producer.send({ topic, messages: [toMessage(event, 0)] });
    await eventually(
      async () =>
        (await db.query('SELECT 1 FROM kit_test_effects WHERE group_id = $1 AND event_id = $2', [groupId, event.id]))
          .rowCount,
      (n) => n === 1,
      60_000,
      'the event handled',
    );
  });
});
