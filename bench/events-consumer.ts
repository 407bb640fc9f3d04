// Notification consumer throughput vs a raw kafkajs consumer, in one run, on the real PostgreSQL and Kafka.
//
//   npm run bench:consumer        (build, then node dist/bench/events-consumer.js [messages])
//
// Produces N valid ticket events (default 50 000) to a fresh 6-partition topic, reads it once untimed
// (kafkajs and the broker's page cache warm up, so the baseline is not measured cold), then reads it:
//   raw      a bare kafkajs consumer (eachBatch, autoCommit, counts messages; no parsing, no database);
//   parse    floor 1: the same plus JSON + zod parse of every message, no database;
//   key      floor 2: parse, then one statement per batch inserting only the 16-byte event id into a
//            one-column table (ON CONFLICT DO NOTHING), then the offset commit: the least any
//            database-backed dedup can do per event;
//   consumer the notifier (apps/consumer on the @tickets/event-consumer kit, inbox 'handler'): JSON +
//            zod parse, one inbox statement per chunk of 1000 (inbox row +
//            pending notification), offset commit after each statement. Webhook sending is DISABLED
//            (dispatch: false): the dispatcher's speed is the receivers', not the consumer's;
//   replay   the same consumer group moved back to earliest: every message is a duplicate (skip path).
// All use partitionsConsumedConcurrently = CONSUMER_PARTITIONS_CONCURRENCY (default 3) and a fresh
// group, and are timed from run() to the N-th message. The floors say how much of the gap to raw
// any design that validates each message and records it durably must pay on this machine. The database is <DATABASE_URL's name>_bench_consumer (migrated, dropped afterwards).
// RSS of this process is sampled every 50 ms while the consumer runs: it must stay flat.
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type EachBatchPayload, type Message } from 'kafkajs';
import { Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createPrismaClient, uuidArray } from '@tickets/db';
import { benchTicketCreated } from './support/ticket-event';
import { TicketEvent } from '@tickets/contracts';
import { createLogger } from '@tickets/logger';
import { createConsumerApp, type NotifierApp } from '../apps/consumer/src/consumer.app';
import { scratchDatabase } from './support/paths';
import { mb } from './support/stats';

export interface ConsumerBenchResult {
  messages: number;
  rawMs: number;
  rawPerSec: number;
  consumerMs: number;
  consumerPerSec: number;
  /** consumer throughput / raw kafkajs throughput (target >= 0.5). */
  ratio: number;
  /** Floor 1: raw + JSON + zod parse of every message, no database. */
  parseOnlyPerSec: number;
  /** Floor 2: parse + one insert of the bare event id per message (one statement per batch) + commit. */
  keyOnlyPerSec: number;
  replayMs: number;
  replayPerSec: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  /** RSS when 25/50/75/100 % of the messages were consumed (flat = bounded memory). */
  rssAtQuartilesMb: number[];
  /** Highest RSS sampled while the replay (every message a duplicate) ran. */
  replayRssPeakMb: number;
}

const PARTITIONS = 6;
const perSec = (n: number, ms: number) => Math.round((n / ms) * 1000);


function event(tenantId: string): Message {
  const e = benchTicketCreated(tenantId);
  return { key: e.ticketId, value: JSON.stringify(e), headers: { 'event-id': e.id, 'event-type': e.type } };
}

/** The floors' parse: what the kit does per message (JSON, then the shared zod schema). */
const parseEvent = (value: Buffer | null): TicketEvent | undefined => {
  const r = TicketEvent.safeParse(JSON.parse(value?.toString('utf8') ?? 'null'));
  return r.success ? r.data : undefined;
};

/** Messages the notifier has taken through its statement (new + duplicates), from the kit's counters. */
async function handled(n: NotifierApp): Promise<{ processed: number; duplicates: number }> {
  const sum = async (c: { get(): Promise<{ values: { value: number }[] }> }) => (await c.get()).values.reduce((s, v) => s + v.value, 0);
  return { processed: await sum(n.server.metrics.processed), duplicates: await sum(n.server.metrics.duplicates) };
}

/** Polls `count()` until it reaches `n`, logging progress once a second; returns the elapsed ms. */
async function until(label: string, n: number, count: () => number | Promise<number>, started: number, log: (l: string) => void, onTick?: (c: number) => void): Promise<number> {
  let lastLog = Date.now();
  for (;;) {
    const c = await count();
    onTick?.(c);
    if (c >= n) return Date.now() - started;
    if (Date.now() - lastLog >= 1000) {
      const ms = Date.now() - started;
      log(`  ${label}: ${c.toLocaleString()}/${n.toLocaleString()} (${Math.floor((c / n) * 100)}%), ${perSec(c, ms).toLocaleString()} msg/s, rss ${mb(process.memoryUsage().rss)} MB`);
      lastLog = Date.now();
    }
    if (Date.now() - started > 600_000) throw new Error(`${label}: stuck at ${c}/${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function runConsumerBench(opts: { messages?: number; log?: (line: string) => void } = {}): Promise<ConsumerBenchResult> {
  const n = opts.messages ?? 50_000;
  const log = opts.log ?? ((line: string) => console.log(line));
  const config = loadConfig();
  const concurrency = config.consumer.partitionsConcurrency;
  const scratch = scratchDatabase(config.database.url, 'bench_consumer');
  const benchUrl = scratch.url;
  const kafka = new Kafka({ brokers: config.kafka.brokers, clientId: 'bench-consumer', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const suffix = randomUUID().slice(0, 8);
  const topic = `bench-consumer-${suffix}`;
  const groups = { warm: `bench-warm-${suffix}`, raw: `bench-raw-${suffix}`, parse: `bench-parse-${suffix}`, key: `bench-key-${suffix}`, consumer: `bench-notifier-${suffix}` };

  await scratch.create();
  const prisma = createPrismaClient(benchUrl, 10, 'bench-consumer');
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }] });
    log(`producing ${n.toLocaleString()} events to ${topic} (${PARTITIONS} partitions) ...`);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const tenants = Array.from({ length: 20 }, () => randomUUID());
    let t = Date.now();
    for (let i = 0; i < n; i += 1000) {
      await producer.send({ topic, acks: -1, messages: Array.from({ length: Math.min(1000, n - i) }, (_, j) => event(tenants[(i + j) % tenants.length])) });
    }
    await producer.disconnect();
    log(`  produced in ${Date.now() - t} ms`);

    // A bare kafkajs consumer (autoCommit) whose eachBatch runs `work` on each batch.
    const readAll = async (label: string, groupId: string, work: (b: EachBatchPayload['batch']) => Promise<void> | void): Promise<number> => {
      let count = 0;
      const c = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
      await c.connect();
      await c.subscribe({ topic, fromBeginning: true });
      const started = Date.now();
      await c.run({
        partitionsConsumedConcurrently: concurrency,
        eachBatch: async ({ batch }) => {
          await work(batch);
          count += batch.messages.length;
        },
      });
      const ms = await until(label, n, () => count, started, log);
      await c.disconnect();
      return ms;
    };

    log('warm-up read (untimed) ...');
    await readAll('warm-up', groups.warm, () => undefined);

    // 1. Raw kafkajs consumer.
    log('raw kafkajs consumer ...');
    const rawMs = await readAll('raw', groups.raw, () => undefined);

    // Floors: what validating every message, then also recording its id durably, cost by themselves.
    log('floor 1: parse only (JSON + zod), no database ...');
    const parseMs = await readAll('parse', groups.parse, (b) => void b.messages.map((m) => parseEvent(m.value)));
    log('floor 2: parse + insert the bare event id (one statement per batch) ...');
    const keyPool = new Pool({ connectionString: benchUrl, max: concurrency });
    await keyPool.query('CREATE TABLE bench_floor_keys (event_id uuid PRIMARY KEY)');
    const keyMs = await readAll('key', groups.key, async (b) => {
      const ids = b.messages.flatMap((m) => parseEvent(m.value)?.id ?? []);
      await keyPool.query('INSERT INTO bench_floor_keys SELECT unnest($1::uuid[]) ON CONFLICT DO NOTHING', [uuidArray(ids)]);
    }).finally(() => keyPool.end());

    // 2. The notification consumer (dedup + notification insert + commit after the transaction).
    log('notification consumer (dispatch disabled) ...');
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const quartiles: number[] = [];
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 50);
    const benchConfig = loadConfig({ ...process.env, DATABASE_URL: benchUrl, TICKET_EVENTS_TOPIC: topic, NOTIFIER_GROUP_ID: groups.consumer });
    const notifierConfig = { ...benchConfig, notifier: { ...benchConfig.notifier, webhookUrl: 'http://127.0.0.1:9/unused', webhookSecret: 'bench-secret-not-used' } };
    // No /metrics endpoint: the process metrics' observers would cost CPU the old consumer did not spend.
    const start = () => createConsumerApp(notifierConfig, loadEventConsumerConfig(), createLogger('silent', 'bench-consumer'), { dispatch: false, metrics: undefined, partitionsConcurrency: concurrency });
    t = Date.now();
    let consumer = await start();
    const consumerMs = await until('consumer', n, async () => (await handled(consumer)).processed, t, log, (done) => {
      while (quartiles.length < 4 && done >= (n * (quartiles.length + 1)) / 4) quartiles.push(mb(process.memoryUsage().rss));
    });
    await consumer.app.close();
    clearInterval(sampler);
    const stats = await handled(consumer);
    if (stats.processed !== n) throw new Error(`consumer processed ${stats.processed} of ${n}`);

    // 3. Replay of the whole topic: every message is already in the inbox.
    log('replay from earliest (all duplicates) ...');
    await admin.resetOffsets({ groupId: groups.consumer, topic, earliest: true });
    let replayRssPeak = process.memoryUsage().rss;
    const replaySampler = setInterval(() => (replayRssPeak = Math.max(replayRssPeak, process.memoryUsage().rss)), 50);
    t = Date.now();
    consumer = await start();
    const replayMs = await until('replay', n, async () => (await handled(consumer)).duplicates, t, log);
    await consumer.app.close();
    clearInterval(replaySampler);
    const replayed = await handled(consumer);
    if (replayed.duplicates !== n || replayed.processed !== 0) throw new Error(`replay skipped ${replayed.duplicates} of ${n}, processed ${replayed.processed}`);
    const [{ notifications }] = await prisma.$queryRaw<{ notifications: number }[]>`SELECT count(*)::int AS notifications FROM notifications`;
    if (notifications !== n) throw new Error(`${notifications} notifications for ${n} events`);

    await admin.deleteGroups(Object.values(groups)).catch(() => undefined);
    const result: ConsumerBenchResult = {
      messages: n,
      rawMs,
      rawPerSec: perSec(n, rawMs),
      consumerMs,
      consumerPerSec: perSec(n, consumerMs),
      ratio: Math.round((rawMs / consumerMs) * 100) / 100,
      parseOnlyPerSec: perSec(n, parseMs),
      keyOnlyPerSec: perSec(n, keyMs),
      replayMs,
      replayPerSec: perSec(n, replayMs),
      rssBeforeMb: mb(rssBefore),
      rssPeakMb: mb(rssPeak),
      rssAtQuartilesMb: quartiles,
      replayRssPeakMb: mb(replayRssPeak),
    };
    return result;
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await prisma.$disconnect();
    await scratch.drop();
  }
}

export function formatConsumerBench(r: ConsumerBenchResult): string {
  const row = (name: string, ms: number, rate: number, vs: string) =>
    `| ${name.padEnd(58)} | ${r.messages.toLocaleString().padStart(8)} | ${`${(ms / 1000).toFixed(2)} s`.padStart(8)} | ${rate.toLocaleString().padStart(8)} | ${vs.padStart(7)} |`;
  return [
    `| ${'run'.padEnd(58)} | messages |     time |    msg/s | vs raw  |`,
    `|${'-'.repeat(60)}|---------:|---------:|---------:|--------:|`,
    row('raw kafkajs consumer (eachBatch, no parse, no DB)', r.rawMs, r.rawPerSec, '1.00x'),
    row('floor 1: + JSON + zod parse, no DB', (r.messages / r.parseOnlyPerSec) * 1000, r.parseOnlyPerSec, `${(r.parseOnlyPerSec / r.rawPerSec).toFixed(2)}x`),
    row('floor 2: + insert the bare event id, commit', (r.messages / r.keyOnlyPerSec) * 1000, r.keyOnlyPerSec, `${(r.keyOnlyPerSec / r.rawPerSec).toFixed(2)}x`),
    row('notification consumer (parse, inbox + notification, commit)', r.consumerMs, r.consumerPerSec, `${r.ratio.toFixed(2)}x`),
    row('replay from earliest (every message a duplicate)', r.replayMs, r.replayPerSec, `${(r.rawMs / r.replayMs).toFixed(2)}x`),
    '',
    `webhook sending disabled (dispatch: false); RSS before ${r.rssBeforeMb} MB, peak ${r.rssPeakMb} MB, at 25/50/75/100 %: ${r.rssAtQuartilesMb.join(' / ')} MB, replay peak ${r.replayRssPeakMb} MB`,
  ].join('\n');
}

if (require.main === module) {
  const messages = process.argv[2] ? Number(process.argv[2]) : undefined;
  runConsumerBench({ messages, log: (l) => process.stderr.write(`${l}\n`) })
    .then((r) => {
      console.log(formatConsumerBench(r));
      process.exit(r.ratio >= 0.5 ? 0 : 1);
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
