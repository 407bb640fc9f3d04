// Outbox relay throughput vs a raw kafkajs producer, in one run, on the real PostgreSQL and Kafka.
//
//   npm run bench:relay        (build, then node dist/bench/events-relay.js)
//
// Seeds an outbox of N rows (default 50 000: 25 000 tickets, created + cancelled) in a database of
// its own (<DATABASE_URL's name>_bench_relay, dropped afterwards), then measures, per round:
//   relay  start() -> every row acknowledged and marked published, to a fresh topic;
//   raw    the same N messages (same key, value, headers) sent by a bare kafkajs producer with the
//          same settings (idempotent, maxInFlightRequests 1, acks -1, sends of 500) to another fresh
//          topic, from a child process (messages preloaded, not timed).
// Also samples the relay's RSS every 50 ms: it must stay flat (the relay streams 500-row batches).
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Kafka, Partitioners, logLevel, type Message } from 'kafkajs';
import { Client } from 'pg';
import { Registry } from 'prom-client';
import { loadConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { scratchDatabase } from './support/paths';
import { mb } from './support/stats';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // this bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

export interface RelayBenchRound {
  relayMs: number;
  rawMs: number;
  /** relay throughput / raw producer throughput in this round. */
  ratio: number;
  /** Highest RSS sampled while the relay drained this round. */
  relayRssPeakMb: number;
}

export interface RelayBenchResult {
  rows: number;
  rounds: RelayBenchRound[];
  /** Medians over the rounds. */
  relayPerSec: number;
  rawPerSec: number;
  ratio: number;
  /** RSS before the first measured drain, and the highest RSS seen during any drain. */
  rssBeforeMb: number;
  rssPeakMb: number;
}

const BATCH = 500;
const PARTITIONS = 6;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const SEED_SQL = `
  INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
  SELECT e, $1::uuid, 'ticket', t, (k).type,
         jsonb_build_object('id', e, 'type', (k).type, 'occurredAt', ts, 'tenantId', $1::uuid, 'ticketId', t,
           'idempotencyKey', 'bench-' || g || '-' || (k).n, 'correlationId', 'corr-' || g || '-' || (k).n,
           'data', jsonb_build_object('id', t, 'title', 'Printer on floor ' || g || ' is out of toner',
             'description', 'Reported by the bench. The tray is empty and the spare cartridge is missing.',
             'priority', 'normal', 'status', (k).status, 'externalRef', 'ext-' || g,
             'requester', jsonb_build_object('name', 'Ada', 'email', 'ada@example.com'),
             'metadata', jsonb_build_object('source', 'bench'), 'createdAt', ts, 'updatedAt', ts)),
         jsonb_build_object('traceparent', '00-' || replace(e::text, '-', '') || '-' || substr(replace(t::text, '-', ''), 1, 16) || '-01',
           'correlation-id', 'corr-' || g || '-' || (k).n)
    FROM (SELECT s.g, s.t, s.ts, k, gen_random_uuid() AS e
            FROM (SELECT g, gen_random_uuid() AS t, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ts
                    FROM generate_series(1, $2::int) g) s
           CROSS JOIN (VALUES (1, 'ticket.created.v1', 'open'), (2, 'ticket.cancelled.v1', 'cancelled')) AS k(n, type, status)
           ORDER BY s.g, k.n) x`;

/**
 * Runs a warm-up round (`warmupRows`, default 5 000 rows, not counted) and `rounds` measured rounds (default 3) of
 * `rows` rows (default 50 000). Each round: seed the outbox, let a fresh relay drain it to a fresh
 * topic, then send the same messages with the raw producer to another fresh topic. Medians are
 * reported because a shared machine makes single runs noisy.
 */
export async function runRelayBench(
  opts: {
    rows?: number;
    rounds?: number;
    log?: (line: string) => void;
    /** rows of the unmeasured warm-up round (default 5 000) */ warmupRows?: number;
  } = {},
): Promise<RelayBenchResult> {
  const rows = opts.rows ?? 50_000;
  const roundCount = opts.rounds ?? 3;
  const log = opts.log ?? ((line: string) => console.log(line));
  const config = loadConfig();
  const scratch = scratchDatabase(config.database.url, 'bench_relay');
  const benchUrl = scratch.url;
  const brokers = config.kafka.brokers;
  const kafka = new Kafka({ brokers, clientId: 'bench-relay', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const topics: string[] = [];

  await scratch.create();
  const db = new Client({ connectionString: benchUrl });
  await db.connect();
  await admin.connect();
  let relay: OutboxRelay | undefined;
  let rssBefore = 0;
  let rssPeak = 0;

  const round = async (n: number, label: string): Promise<RelayBenchRound> => {
    await db.query('TRUNCATE outbox_events, outbox_pending, outbox_publications, outbox_dead_letters');
    let t = Date.now();
    await db.query(SEED_SQL, [randomUUID(), Math.ceil(n / 2)]);
    log(`${label}: seeded ${n.toLocaleString()} outbox rows in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const suffix = randomUUID().slice(0, 8);
    const relayTopic = `bench-relay-${suffix}`;
    const rawTopic = `bench-raw-${suffix}`;
    topics.push(relayTopic, rawTopic);
    await admin.createTopics({
      waitForLeaders: true,
      topics: [relayTopic, rawTopic].map((topic) => ({ topic, numPartitions: PARTITIONS })),
    });

    // --- relay: start() -> every row acknowledged and marked ---------------------------------------
    const registry = new Registry();
    relay = new OutboxRelay({
      databaseUrl: benchUrl,
      kafka: { brokers, clientId: 'bench-relay', topic: relayTopic, partitions: PARTITIONS },
      logger: createLogger('warn', 'bench-relay'),
      registry,
      batchSize: BATCH,
    });
    const published = async () =>
      (await registry.getSingleMetric('outbox_published_total')!.get()).values[0]?.value ?? 0;
    rssBefore ||= process.memoryUsage().rss;
    let roundPeak = process.memoryUsage().rss;
    const sampler = setInterval(() => (roundPeak = Math.max(roundPeak, process.memoryUsage().rss)), 50);
    t = Date.now();
    let lastReport = t;
    await relay.start();
    for (;;) {
      const done = await published();
      if (done >= n) break;
      if (Date.now() - lastReport >= 1_000) {
        lastReport = Date.now();
        log(`  relay ${done.toLocaleString()} / ${n.toLocaleString()}  rss ${mb(process.memoryUsage().rss)} MB`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const relayMs = Date.now() - t;
    clearInterval(sampler);
    roundPeak = Math.max(roundPeak, process.memoryUsage().rss);
    const stats = await relay.stats();
    await relay.stop();
    relay = undefined;
    if (stats.pending !== 0 || stats.deadLetters !== 0)
      throw new Error(`relay left ${stats.pending} pending / ${stats.deadLetters} dead letters`);

    // --- raw producer: the same messages, same settings, in a child process (so that its 50 000
    // messages held in memory do not inflate the relay's RSS in the next round) --------------------
    const rawMs = await rawProducerInChild(benchUrl, brokers, rawTopic);
    const ratio = Math.round((rawMs / relayMs) * 100) / 100;
    log(
      `${label}: relay ${(relayMs / 1000).toFixed(2)} s, raw ${(rawMs / 1000).toFixed(2)} s, ratio ${ratio}x, relay rss peak ${mb(roundPeak)} MB`,
    );
    await admin.deleteTopics({ topics: [relayTopic, rawTopic] }).catch(() => undefined);
    return { relayMs, rawMs, ratio, relayRssPeakMb: mb(roundPeak) };
  };

  try {
    await round(opts.warmupRows ?? 5_000, 'warm-up');
    rssBefore = process.memoryUsage().rss;
    const rounds: RelayBenchRound[] = [];
    for (let i = 1; i <= roundCount; i++) {
      const r = await round(rows, `round ${i}/${roundCount}`);
      rssPeak = Math.max(rssPeak, r.relayRssPeakMb);
      rounds.push(r);
    }
    return {
      rows,
      rounds,
      relayPerSec: Math.round((rows / median(rounds.map((r) => r.relayMs))) * 1000),
      rawPerSec: Math.round((rows / median(rounds.map((r) => r.rawMs))) * 1000),
      ratio: median(rounds.map((r) => r.ratio)),
      rssBeforeMb: mb(rssBefore),
      rssPeakMb: rssPeak,
    };
  } finally {
    await relay?.stop().catch(() => undefined);
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
    await db.end();
    await scratch.drop();
  }
}

/** Loads the seeded rows as messages (not timed), then times connect + sends of 500. */
async function rawProducer(databaseUrl: string, brokers: string[], topic: string): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const { rows } = await db
    .query<{ key: string; value: string; eventId: string; eventType: string; headers: Record<string, string> }>(
      `SELECT aggregate_id AS key, payload::text AS value, event_id AS "eventId", event_type AS "eventType", headers FROM outbox_events ORDER BY seq`,
    )
    .finally(() => db.end());
  const messages: Message[] = rows.map((r) => ({
    key: r.key,
    value: r.value,
    headers: {
      'event-id': r.eventId,
      'event-type': r.eventType,
      traceparent: r.headers.traceparent,
      'correlation-id': r.headers['correlation-id'],
    },
  }));
  const kafka = new Kafka({ brokers, clientId: 'bench-raw', logLevel: logLevel.NOTHING });
  const t = Date.now();
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  for (let i = 0; i < messages.length; i += BATCH) {
    await producer.send({ topic, acks: -1, messages: messages.slice(i, i + BATCH) });
  }
  const ms = Date.now() - t;
  await producer.disconnect();
  return ms;
}

function rawProducerInChild(databaseUrl: string, brokers: string[], topic: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, [RAW_PRODUCER_ARG, databaseUrl, brokers.join(','), topic], {
      execArgv: process.execArgv,
    });
    let ms: number | undefined;
    child.on('message', (m: { rawMs?: number }) => (ms = m.rawMs));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 && ms !== undefined ? resolve(ms) : reject(new Error(`raw producer exited with ${code}`)),
    );
  });
}

const RAW_PRODUCER_ARG = '--raw-producer';

if (require.main === module && process.argv[2] === RAW_PRODUCER_ARG) {
  const [, , , databaseUrl, brokers, topic] = process.argv;
  rawProducer(databaseUrl, brokers.split(','), topic).then(
    (rawMs) => process.send!({ rawMs }, () => process.exit(0)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
} else if (require.main === module) {
  runRelayBench().then(
    (r) => {
      console.log('');
      console.table(
        Object.fromEntries(
          r.rounds.map((x, i) => [
            `round ${i + 1}`,
            {
              'relay (s)': x.relayMs / 1000,
              'raw producer (s)': x.rawMs / 1000,
              'relay/raw': x.ratio,
              'relay RSS peak (MB)': x.relayRssPeakMb,
            },
          ]),
        ),
      );
      console.log(
        `${r.rows.toLocaleString()} messages per round; medians: relay ${r.relayPerSec} msg/s, raw producer ${r.rawPerSec} msg/s`,
      );
      console.log(`relay / raw = ${r.ratio}x (target >= 0.5x)`);
      console.log(
        `relay RSS: ${r.rssBeforeMb} MB before the first measured drain, ${r.rssPeakMb} MB peak over all drains`,
      );
      process.exit(r.ratio >= 0.5 ? 0 : 1);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
