// The notifier against the consumer one would write by hand, in one run, on the real PostgreSQL and Kafka.
//
//   npm run bench:consumer        (build, then node dist/bench/events-consumer.js [messages])
//
// Produces N valid ticket events (default 50 000) to a fresh 6-partition topic, reads it once untimed
// (kafkajs and the broker's page cache warm up, so the baseline is not measured cold), then reads it:
//   raw      a bare kafkajs consumer (eachBatch, autoCommit, counts messages; no parsing, no database):
//            context only, a consumer that does nothing is no anchor;
//   parse    floor 1: the same plus JSON + zod parse of every message, no database;
//   key      floor 2: parse, then one statement per batch inserting only the 16-byte event id into a
//            one-column table (ON CONFLICT DO NOTHING), then the offset commit;
//   hand     THE ANCHOR (bench/support/hand-notifier.ts): kafkajs eachBatch + pg, per chunk of 1000 one
//            statement inserting the inbox rows and a pending notification for each new one, then the
//            offset commit: the same effect as the notifier, written by hand;
//   notifier apps/consumer on the @tickets/event-consumer kit (inbox 'handler'): JSON + zod parse, one
//            inbox statement per chunk of 1000 (inbox row + pending notification, dead letters, replay
//            counters), offset commit after each statement. Webhook sending is DISABLED (dispatch:
//            false) here: the dispatcher's speed is the receivers', not the consumer's;
//   replay   the notifier's group moved back to earliest: every message is a duplicate (skip path).
// hand and notifier run three times each, alternately, each on emptied inbox/notification tables; the
// bar is the median of the per-round ratios. All use partitionsConsumedConcurrently =
// CONSUMER_PARTITIONS_CONCURRENCY and a fresh group, and are timed from the end of their first batch
// (or statement) to the one covering the N-th message: group joins are not measured. The database is
// <DATABASE_URL's name>_bench_consumer (migrated, dropped afterwards).
// RSS of this process is sampled every 50 ms while the first notifier run and the replay run: it must stay flat.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Kafka, logLevel, type EachBatchPayload, type Message } from 'kafkajs';
import { Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { uuidArray } from '@tickets/event-consumer';
import { benchTicketCreated } from './support/ticket-event';
import { TicketEvent } from '@tickets/contracts';
import { createLogger } from '@tickets/logger';
import type { TicketEventsOptions } from '@tickets/event-consumer';
import { withFaults } from '@tickets/event-consumer/testing';
import { createConsumerApp, notifierOptions, type NotifierApp } from '@tickets/consumer';
import { scratchDatabase } from './support/paths';
import { mb, median } from './support/stats';
import { HAND_NOTIFIER_APPLICATION_NAME, startHandNotifier } from './support/hand-notifier';
import { cpuSecondsOf } from './support/api-process';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // this bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

export interface ConsumerBenchResult {
  messages: number;
  rawMs: number;
  rawPerSec: number;
  /** The notifier, median of its 3 runs (from its first statement to the one covering the N-th message). */
  consumerPerSec: number;
  /** notifier / raw kafkajs consumer (context: a consumer that does nothing). */
  ratio: number;
  /** The hand-written kafkajs eachBatch + pg anchor (bench/support/hand-notifier.ts), median of its 3 runs. */
  handPerSec: number;
  /** msg/s and CPU of each round, run back to back (the order alternates). */
  pairs: { hand: number; notifier: number; handCpu: RunCpu; notifierCpu: RunCpu }[];
  /** Median over the rounds of notifier / hand-written (target >= 0.8, issue #13). */
  ratioVsHand: number;
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

/** CPU per message of one run: the node process, and the run's PostgreSQL backends. */
export interface RunCpu {
  nodeUs: number;
  postgresUs: number;
}
interface Run {
  rate: number;
  cpu: RunCpu;
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
  const sum = async (c: { get(): Promise<{ values: { value: number }[] }> }) =>
    (await c.get()).values.reduce((s, v) => s + v.value, 0);
  return { processed: await sum(n.server.metrics.processed), duplicates: await sum(n.server.metrics.duplicates) };
}

/** Polls `count()` until it reaches `n`, logging progress once a second; returns the elapsed ms. */
async function until(
  label: string,
  n: number,
  count: () => number | Promise<number>,
  started: number,
  log: (l: string) => void,
  onTick?: (c: number) => void,
): Promise<number> {
  let lastLog = Date.now();
  for (;;) {
    const c = await count();
    onTick?.(c);
    if (c >= n) return Date.now() - started;
    if (Date.now() - lastLog >= 1000) {
      const ms = Date.now() - started;
      log(
        `  ${label}: ${c.toLocaleString()}/${n.toLocaleString()} (${Math.floor((c / n) * 100)}%), ${perSec(c, ms).toLocaleString()} msg/s, rss ${mb(process.memoryUsage().rss)} MB`,
      );
      lastLog = Date.now();
    }
    if (Date.now() - started > 600_000) throw new Error(`${label}: stuck at ${c}/${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function runConsumerBench(
  opts: { messages?: number; log?: (line: string) => void } = {},
): Promise<ConsumerBenchResult> {
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
  const groups = {
    warm: `bench-warm-${suffix}`,
    raw: `bench-raw-${suffix}`,
    parse: `bench-parse-${suffix}`,
    key: `bench-key-${suffix}`,
    consumer: `bench-notifier-${suffix}`,
  };

  await scratch.create();
  const prisma = createPrismaClient(benchUrl, 10, 'bench-consumer');
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    });
    log(`producing ${n.toLocaleString()} events to ${topic} (${PARTITIONS} partitions) ...`);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const tenants = Array.from({ length: 20 }, () => randomUUID());
    const t0 = Date.now();
    for (let i = 0; i < n; i += 1000) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: Math.min(1000, n - i) }, (_, j) => event(tenants[(i + j) % tenants.length])),
      });
    }
    await producer.disconnect();
    log(`  produced in ${Date.now() - t0} ms`);

    // A bare kafkajs consumer (autoCommit) whose eachBatch runs `work` on each batch. Returns the time it
    // would take for n messages at the rate measured from the end of the first batch (as for the notifier
    // and the hand-written consumer below: group joins are not measured).
    const readAll = async (
      label: string,
      groupId: string,
      work: (b: EachBatchPayload['batch']) => Promise<void> | void,
    ): Promise<number> => {
      let count = 0;
      let first: { at: number; count: number } | undefined;
      let last = 0;
      const c = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
      await c.connect();
      await c.subscribe({ topic, fromBeginning: true });
      const started = Date.now();
      await c.run({
        partitionsConsumedConcurrently: concurrency,
        eachBatch: async ({ batch }) => {
          await work(batch);
          count += batch.messages.length;
          first ??= { at: performance.now(), count };
          if (count >= n) last ||= performance.now();
        },
      });
      await until(label, n, () => count, started, log);
      const ms = ((last - first!.at) * n) / Math.max(1, n - first!.count);
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
      await keyPool.query('INSERT INTO bench_floor_keys SELECT unnest($1::uuid[]) ON CONFLICT DO NOTHING', [
        uuidArray(ids),
      ]);
    }).finally(() => keyPool.end());

    // 2. The notifier vs the hand-written anchor (same statement's effect, same chunk and concurrency),
    // alternately, each on an emptied inbox and notifications table, each a fresh group; timed from the
    // first chunk's statement to the statement that covered the N-th message (group joins not measured).
    const benchConfig = loadConfig({ ...process.env, DATABASE_URL: benchUrl, TICKET_EVENTS_TOPIC: topic });
    const webhookUrl = 'http://127.0.0.1:9/unused';
    const notifierConfig = {
      ...benchConfig,
      notifier: { ...benchConfig.notifier, webhookUrl, webhookSecret: 'bench-secret-not-used' },
    };
    const chunkSize = notifierOptions(notifierConfig, loadEventConsumerConfig()).chunkSize!;
    const emptyTables = () => prisma.$executeRawUnsafe('TRUNCATE ticket_events.inbox_events, notifications CASCADE');
    const notificationsOf = async (groupId: string) =>
      (
        await prisma.$queryRaw<
          { n: number }[]
        >`SELECT count(*)::int AS n FROM notifications WHERE group_id = ${groupId}`
      )[0].n;
    let rssBefore = 0;
    let rssPeak = 0;
    const quartiles: number[] = [];
    let notifierGroup = '';
    let notifier: NotifierApp | undefined;
    // A clock started by the first statement: `covered` messages so far; resolves at n.
    const clock = () => {
      let first: { at: number; covered: number } | undefined;
      let resolveDone!: (perSec: number) => void;
      const done = new Promise<number>((r) => (resolveDone = r));
      return {
        done,
        tick(covered: number) {
          const at = performance.now();
          if (!first) first = { at, covered };
          else if (covered >= n) resolveDone(perSec(n - first.covered, at - first.at));
          if (!notifier) return;
          while (quartiles.length < 4 && covered >= (n * (quartiles.length + 1)) / 4)
            quartiles.push(mb(process.memoryUsage().rss));
        },
      };
    };
    // CPU of a run: this process (only one consumer runs at a time) and the run's own PostgreSQL backends
    // (fresh connections, found by application_name before they close), in µs per message. Less
    // sensitive than msg/s to what else runs on the machine.
    const backendCpuMs = async (applicationName: string) => {
      const pids = await prisma.$queryRaw<
        { pid: number }[]
      >`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${applicationName}`;
      return pids.reduce((sum, { pid }) => sum + (existsSync(`/proc/${pid}`) ? cpuSecondsOf(pid) * 1000 : 0), 0);
    };
    const cpuOf = async (cpu0: NodeJS.CpuUsage, applicationName: string): Promise<RunCpu> => {
      const node = process.cpuUsage(cpu0);
      return {
        nodeUs: Math.round(((node.user + node.system) / n) * 10) / 10,
        postgresUs: Math.round((((await backendCpuMs(applicationName)) * 1000) / n) * 10) / 10,
      };
    };
    const withDeadline = <T>(label: string, p: Promise<T>) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`${label}: not done within 600 s`)), 600_000).unref(),
        ),
      ]);
    const runHand = async (): Promise<Run> => {
      await emptyTables();
      const groupId = `bench-hand-${randomUUID().slice(0, 8)}`;
      const c = clock();
      const cpu0 = process.cpuUsage();
      let covered = 0;
      const stop = await startHandNotifier({
        brokers: config.kafka.brokers,
        databaseUrl: benchUrl,
        topic,
        groupId,
        chunkSize,
        partitionsConcurrency: concurrency,
        webhookUrl,
        onChunk: (m) => c.tick((covered += m)),
      });
      const rate = await withDeadline('hand-written', c.done);
      const cpu = await cpuOf(cpu0, HAND_NOTIFIER_APPLICATION_NAME);
      await stop();
      const made = await notificationsOf(groupId);
      if (made !== n) throw new Error(`hand-written consumer made ${made} notifications for ${n} events`);
      await admin.deleteGroups([groupId]).catch(() => undefined);
      return { rate, cpu };
    };
    const runNotifier = async (sampleRss: boolean): Promise<Run> => {
      await emptyTables();
      notifierGroup = `bench-notifier-${randomUUID().slice(0, 8)}`;
      const c = clock();
      const next = new Map<number, number>(); // partition -> last offset + 1 (a fresh topic: offsets from 0)
      let sampler: NodeJS.Timeout | undefined;
      if (sampleRss) {
        rssBefore = rssPeak = process.memoryUsage().rss;
        sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 50);
      }
      const cpu0 = process.cpuUsage();
      const app = await startNotifier(notifierGroup, (at) => {
        next.set(at.partition, Number(at.lastOffset) + 1);
        c.tick([...next.values()].reduce((a, b) => a + b, 0));
      });
      notifier = sampleRss ? app : undefined;
      const rate = await withDeadline('notifier', c.done);
      const cpu = await cpuOf(cpu0, `event-consumer-${notifierGroup}`.slice(0, 63));
      await app.app.close();
      notifier = undefined;
      clearInterval(sampler);
      const stats = await handled(app);
      if (stats.processed !== n) throw new Error(`notifier processed ${stats.processed} of ${n}`);
      return { rate, cpu };
    };
    // No /metrics endpoint: the process metrics' observers cost CPU a hand-written consumer does not spend.
    const startNotifier = (groupId: string, afterStatement?: (at: { partition: number; lastOffset: string }) => void) =>
      createConsumerApp(
        { ...notifierConfig, notifier: { ...notifierConfig.notifier, groupId } },
        loadEventConsumerConfig(),
        createLogger('silent', 'bench-consumer'),
        {
          dispatch: false,
          ...withFaults(
            { groupId, metrics: false, partitionsConcurrency: concurrency } as TicketEventsOptions,
            afterStatement ? { afterTransactionBeforeCommit: (at) => void afterStatement(at) } : undefined,
          ),
        },
      );
    const pairs: ConsumerBenchResult['pairs'] = [];
    for (let round = 0; round < 3; round++) {
      // The order alternates, so neither side always runs on the warmer process.
      let hand: Run;
      let notif: Run;
      if (round % 2 === 0) {
        log(`round ${round + 1}/3: hand-written anchor, then the notifier (dispatch disabled) ...`);
        hand = await runHand();
        notif = await runNotifier(round === 0);
      } else {
        log(`round ${round + 1}/3: notifier, then the hand-written anchor ...`);
        notif = await runNotifier(false);
        hand = await runHand();
      }
      pairs.push({ hand: hand.rate, notifier: notif.rate, handCpu: hand.cpu, notifierCpu: notif.cpu });
      log(
        `  notifier ${notif.rate.toLocaleString()} msg/s, hand-written ${hand.rate.toLocaleString()} msg/s: ${(notif.rate / hand.rate).toFixed(2)}x; ` +
          `CPU µs/msg node + PostgreSQL: notifier ${notif.cpu.nodeUs} + ${notif.cpu.postgresUs}, hand-written ${hand.cpu.nodeUs} + ${hand.cpu.postgresUs}`,
      );
    }
    // The last round (an odd number of them) ran the notifier last, on tables emptied before it: its
    // group's inbox is complete for the replay.

    // 3. Replay of the whole topic: every message is already in the inbox.
    log('replay from earliest (all duplicates) ...');
    await admin.resetOffsets({ groupId: notifierGroup, topic, earliest: true });
    let replayRssPeak = process.memoryUsage().rss;
    const replaySampler = setInterval(() => (replayRssPeak = Math.max(replayRssPeak, process.memoryUsage().rss)), 50);
    const t = Date.now();
    const replay = await startNotifier(notifierGroup);
    const replayMs = await until('replay', n, async () => (await handled(replay)).duplicates, t, log);
    await replay.app.close();
    clearInterval(replaySampler);
    const replayed = await handled(replay);
    if (replayed.duplicates !== n || replayed.processed !== 0)
      throw new Error(`replay skipped ${replayed.duplicates} of ${n}, processed ${replayed.processed}`);
    if ((await notificationsOf(notifierGroup)) !== n)
      throw new Error(`replay changed the notifications of ${notifierGroup}`);
    groups.consumer = notifierGroup;

    await admin.deleteGroups(Object.values(groups)).catch(() => undefined);
    const med = (xs: number[]) => median(xs);
    const notifierPerSec = Math.round(med(pairs.map((p) => p.notifier)));
    const result: ConsumerBenchResult = {
      messages: n,
      rawMs,
      rawPerSec: perSec(n, rawMs),
      consumerPerSec: notifierPerSec,
      ratio: Math.round((notifierPerSec / perSec(n, rawMs)) * 100) / 100,
      handPerSec: Math.round(med(pairs.map((p) => p.hand))),
      pairs,
      ratioVsHand: Math.round(med(pairs.map((p) => p.notifier / p.hand)) * 100) / 100,
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
  const row = (name: string, rate: number, vs: string, vsHand = '') =>
    `| ${name.padEnd(66)} | ${rate.toLocaleString().padStart(8)} | ${vs.padStart(7)} | ${vsHand.padStart(13)} |`;
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  return [
    `| ${'run'.padEnd(66)} |    msg/s | vs raw  | vs hand-written |`,
    `|${'-'.repeat(68)}|---------:|--------:|--------------:|`,
    row('raw kafkajs consumer (eachBatch, no parse, no DB)', r.rawPerSec, '1.00x'),
    row('floor 1: + JSON + zod parse, no DB', r.parseOnlyPerSec, x(r.parseOnlyPerSec, r.rawPerSec)),
    row('floor 2: + insert the bare event id, commit', r.keyOnlyPerSec, x(r.keyOnlyPerSec, r.rawPerSec)),
    row(
      'hand-written: eachBatch + pg, inbox + notification statement, commit',
      r.handPerSec,
      x(r.handPerSec, r.rawPerSec),
      '1.00x',
    ),
    row(
      'the notifier (kit + NotifierController), median of 3',
      r.consumerPerSec,
      x(r.consumerPerSec, r.rawPerSec),
      `${r.ratioVsHand.toFixed(2)}x`,
    ),
    row('replay from earliest (every message a duplicate)', r.replayPerSec, x(r.replayPerSec, r.rawPerSec)),
    '',
    `rounds (notifier / hand-written msg/s): ${r.pairs.map((p, i) => `${i + 1}: ${p.notifier.toLocaleString()} / ${p.hand.toLocaleString()} (${x(p.notifier, p.hand)})`).join('; ')}`,
    `CPU per message, node + PostgreSQL (µs): ${r.pairs.map((p, i) => `${i + 1}: notifier ${p.notifierCpu.nodeUs} + ${p.notifierCpu.postgresUs}, hand-written ${p.handCpu.nodeUs} + ${p.handCpu.postgresUs}`).join('; ')}`,
    `webhook sending disabled (dispatch: false); RSS before ${r.rssBeforeMb} MB, peak ${r.rssPeakMb} MB, at 25/50/75/100 %: ${r.rssAtQuartilesMb.join(' / ')} MB, replay peak ${r.replayRssPeakMb} MB`,
  ].join('\n');
}

if (require.main === module) {
  const messages = process.argv[2] ? Number(process.argv[2]) : undefined;
  runConsumerBench({ messages, log: (l) => process.stderr.write(`${l}\n`) })
    .then((r) => {
      console.log(formatConsumerBench(r));
      process.exit(0);
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
