// Broker back -> first publish: how long the relay takes to notice that the broker answers again,
// after outages of several lengths, on the real PostgreSQL and Kafka.
//
//   npm run build && bash scripts/node.sh dist/bench/relay-broker-recovery.js
//
// The relay (default settings: RELAY_RETRY_MAX_DELAY 30 s, outage retries capped at 1 s) reaches the
// broker through a TcpCutProxy (kafkajs socketFactory), so the shared broker keeps running. Rounds:
//   boot     the broker is unreachable when the relay starts; rows wait; the proxy opens after OUTAGE;
//   cut N s  rows published, the proxy is cut (refused + sockets reset), rows keep arriving, the proxy
//            opens after N s.
// Measured: proxy listening again -> the first row of the outage acknowledged and marked (the
// relay's `outbox_published_total` rises; polled every 10 ms, the mark adds up to markFoldMs).
// Knobs: OUTAGES (seconds, comma-separated; default 5,20,45), OUTAGE_RETRY_MAX_MS (the relay's
// outageRetryMaxMs; 30000 reproduces a relay without the outage cap).
import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { Registry } from 'prom-client';
import { loadConfig } from '@tickets/config';
import { TcpCutProxy } from '@tickets/fault-proxy';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { positiveNumberEnv, scratchDatabase } from './support/paths';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // this bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

const INSERT_SQL = `
  INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
  SELECT e, $1::uuid, 'ticket', t, 'ticket.created.v1',
         jsonb_build_object('id', e, 'type', 'ticket.created.v1', 'occurredAt', ts, 'tenantId', $1::uuid, 'ticketId', t,
           'idempotencyKey', 'k-' || e, 'correlationId', 'c-' || e,
           'data', jsonb_build_object('id', t, 'title', 'recovery bench', 'description', null, 'priority', 'normal',
             'status', 'open', 'externalRef', null, 'requester', null, 'metadata', null, 'createdAt', ts, 'updatedAt', ts)),
         '{}'::jsonb
    FROM (SELECT gen_random_uuid() AS e, gen_random_uuid() AS t,
                 to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ts
            FROM generate_series(1, $2::int)) x`;

async function main(): Promise<void> {
  const outages = (process.env.OUTAGES ?? '5,20,45')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const config = loadConfig();
  const [host, port] = config.kafka.brokers[0].split(':');
  const proxy = new TcpCutProxy({ host, port: Number(port) });
  await proxy.reservePort();
  const scratch = scratchDatabase(config.database.url, 'bench_relay_recovery');
  await scratch.create();
  const db = new Client({ connectionString: scratch.url });
  await db.connect();
  const topic = `bench-recovery-${randomUUID().slice(0, 8)}`;
  const registry = new Registry();
  const relay = new OutboxRelay({
    databaseUrl: scratch.url,
    kafka: {
      brokers: config.kafka.brokers,
      clientId: 'bench-recovery',
      topic,
      partitions: 6,
      client: { socketFactory: ({ onConnect }) => connect({ host: '127.0.0.1', port: proxy.port }, onConnect) },
    },
    logger: createLogger(process.env.LOG_LEVEL ?? 'info', 'bench-recovery'),
    registry,
    ...(process.env.OUTAGE_RETRY_MAX_MS ? { outageRetryMaxMs: positiveNumberEnv('OUTAGE_RETRY_MAX_MS', 1_000) } : {}),
  });
  const published = async () => (await registry.getSingleMetric('outbox_published_total')!.get()).values[0]?.value ?? 0;
  const insert = (n: number) => db.query(INSERT_SQL, [randomUUID(), n]);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** From the proxy listening again to the published counter passing `before`. */
  const recovery = async (before: number) => {
    await proxy.listen();
    const t0 = performance.now();
    while ((await published()) <= before) await sleep(10);
    return Math.round(performance.now() - t0);
  };
  const results: Array<{ round: string; 'outage (s)': number; 'broker back -> first publish (ms)': number }> = [];
  try {
    const bootOutage = outages[0];
    await relay.start();
    await insert(10);
    await sleep(bootOutage * 1000);
    results.push({
      round: 'down at boot',
      'outage (s)': bootOutage,
      'broker back -> first publish (ms)': await recovery(0),
    });
    for (const seconds of outages) {
      while ((await db.query('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n > 0) await sleep(50);
      const before = await published();
      await proxy.cut();
      const end = Date.now() + seconds * 1000;
      while (Date.now() < end) {
        await insert(5); // rows keep arriving during the outage
        await sleep(Math.min(1_000, end - Date.now()));
      }
      results.push({
        round: `cut ${seconds}s`,
        'outage (s)': seconds,
        'broker back -> first publish (ms)': await recovery(before),
      });
    }
  } finally {
    await relay.stop();
    await db.end();
    await proxy.cut();
    await scratch.drop();
    const admin = new Kafka({
      brokers: config.kafka.brokers,
      clientId: 'bench-recovery',
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  }
  console.table(results);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
