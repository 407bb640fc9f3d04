// The first seconds after a start (issue #18, "no cold start"): latency of processes started fresh, as shipped,
// under an open loop of creates that begins the moment they are ready, against their steady state later in
// the same loop. Two variants alternate in one run (A B B A A B ...), so the comparison is measured on the
// same box at the same time.
//
//   npm run bench:fresh-pg -- dist/bench/cold-start.js
//   COLD_PATH=webhook COLD_BASE_ROOT=/path/to/other/checkout npm run bench:fresh-pg -- dist/bench/cold-start.js
//
// COLD_PATH=post (default): the API alone (its relay running), POST latency (response - intended send time).
//   The variants: the API as shipped (DB_POOL_WARM default 4: connections opened and warmed before it listens)
//   and DB_POOL_WARM=0 (every connection opened by a request).
// COLD_PATH=webhook: the API and the notification consumer, both started fresh; the consumer in a new group per
//   start whose offsets are set to the topic's end (a restart with nothing to catch up on); ready when /health/ready answers 200 and the group is Stable with a member; latency =
//   signed webhook's arrival - intended send time (the receiver is in this process).
// COLD_BASE_ROOT=<checkout, built>: the variants are this checkout and that one (its built apps), both with
//   the application's defaults: a before/after of the build rather than of one setting.
// Per start: COLD_RATE req/s (100) for COLD_SECONDS (10), a fresh Idempotency-Key per request, on the bench's
// database (<DATABASE_URL's name>_cold_start, migrated once, dropped afterwards).
// Reported per variant, median over its starts: the worst of the first 10 requests, p99 and worst of the first
// second, p99 of the second half (the steady state), and the first second's p99 over the steady p99.
// Env: COLD_STARTS (6 per variant), COLD_RATE, COLD_SECONDS, COLD_PATH, COLD_BASE_ROOT. The children inherit the rest.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { Client } from 'pg';
import { configDefaults } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';
import {
  kafkaTimestamps,
  openLoop,
  startChild,
  ticketTimes,
  waitForWebhooks,
  type Child,
  type Sample,
} from './events-latency';
import { apiMainJs, startApi } from './support/api-process';
import { startReceiver } from './support/webhook-receiver';
import { checkpoint } from './support/cpu-meter';
import { fixed, median, percentile } from './support/stats';
import {
  API_NODE_ARGS,
  CONSUMER_NODE_ARGS,
  positiveNumberEnv as num,
  repoRoot,
  requireHooks,
  scratchDatabase,
} from './support/paths';
import { randomBytes } from 'node:crypto';

patchKafkajsRequestQueue();

interface Variant {
  name: string;
  /** The checkout whose built apps run (apps/<name>/dist). */
  root: string;
  env: Record<string, string>;
}

function variants(): Variant[] {
  const here = repoRoot();
  const other = process.env.COLD_BASE_ROOT;
  if (other)
    return [
      { name: `this checkout (${here})`, root: here, env: {} },
      { name: `base (${other})`, root: other, env: {} },
    ];
  return [
    { name: 'as shipped (DB_POOL_WARM default)', root: here, env: {} },
    { name: 'DB_POOL_WARM=0', root: here, env: { DB_POOL_WARM: '0' } },
  ];
}

interface StartResult {
  variant: string;
  readyMs: number;
  first10Max: number;
  firstSecondP99: number;
  firstSecondMax: number;
  steadyP99: number;
  bad: number;
}

const log = (line: string) => process.stderr.write(`[${fixed(performance.now() / 1000, 1)}s] ${line}\n`);

/** Per request of the loop, in send order: its latency, or NaN when it failed (a non-201, no webhook). */
function summarise(variant: string, readyMs: number, lat: number[], rate: number): StartResult {
  const ok = (xs: number[]) => xs.filter(Number.isFinite);
  const firstSecond = ok(lat.slice(0, rate));
  return {
    variant,
    readyMs,
    first10Max: Math.max(...ok(lat.slice(0, 10))),
    firstSecondP99: percentile(firstSecond, 0.99),
    firstSecondMax: Math.max(...firstSecond),
    steadyP99: percentile(ok(lat.slice(Math.floor(lat.length / 2))), 0.99),
    bad: lat.filter((v) => !Number.isFinite(v)).length,
  };
}

/** A few sends to every partition first, so that no start is the first to produce to the topic. */
async function warmTopic(kafka: Kafka, topic: string): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  for (let round = 0; round < 20; round++)
    await producer.send({
      topic,
      messages: Array.from({ length: 6 }, (_, partition) => ({ partition, key: 'warm-up', value: 'not an event' })),
    });
  await producer.disconnect();
}

/** Until the group is Stable with a member: the consumer has its partitions and fetches. */
async function waitGroupStable(admin: Admin, groupId: string, consumer: Child): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [g] = (await admin.describeGroups([groupId])).groups;
    if (g?.state === 'Stable' && g.members.length > 0) return;
    if (Date.now() > deadline)
      throw new Error(`group ${groupId} not Stable within 60 s (${g?.state}); consumer: ${consumer.stderrTail()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** performance.now() on the wall clock (ms since the epoch), to compare with database and Kafka timestamps. */
const wallOffset = Date.now() - performance.now();

/**
 * Where the first second's time went, per stage of the path, against the second half's: median and worst of
 * send -> API created_at, created_at -> relay send (the record's Kafka timestamp), relay send -> the
 * consumer's inbox statement (received_at), inbox statement -> webhook arrival. One clock: this machine's.
 */
async function stageLines(
  db: Client,
  kafka: Kafka,
  topic: string,
  groupId: string,
  samples: Sample[],
  arrivals: Map<string, { at: number }>,
  rate: number,
): Promise<string> {
  const ids = samples.flatMap((s) => (s.ticketId ? [s.ticketId] : []));
  const byTicket = await ticketTimes(db, groupId, ids);
  const sent = await kafkaTimestamps(kafka, topic, new Set(ids));
  const names = ['send -> created_at', 'created_at -> relay send', 'relay send -> inbox', 'inbox -> webhook'];
  const parts = (from: number, to: number) => {
    const per: number[][] = names.map(() => []);
    for (const s of samples.slice(from, to)) {
      const r = s.ticketId ? byTicket.get(s.ticketId) : undefined;
      const a = s.ticketId ? arrivals.get(s.ticketId) : undefined;
      const k = s.ticketId ? sent.get(s.ticketId) : undefined;
      if (!r || !a || k === undefined || r.received_ms === null) continue;
      const [c, i] = [Number(r.created_ms), Number(r.received_ms)];
      [c - (wallOffset + s.intended), k - c, i - k, wallOffset + a.at - i].forEach((v, j) => per[j].push(v));
    }
    return names
      .map((n, j) => `${n} ${fixed(percentile(per[j], 0.5))}/${fixed(per[j].length ? Math.max(...per[j]) : NaN)}`)
      .join(', ');
  };
  return `first second: ${parts(0, rate)}; second half: ${parts(Math.floor(samples.length / 2), samples.length)} (median/max ms)`;
}

async function main(): Promise<void> {
  const base = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/tickets';
  const brokers = (process.env.KAFKA_BROKERS || configDefaults().kafka.brokers.join(',')).split(',');
  const starts = num('COLD_STARTS', 6);
  const rate = num('COLD_RATE', 100);
  const seconds = num('COLD_SECONDS', 10);
  const path = process.env.COLD_PATH ?? 'post';
  if (path !== 'post' && path !== 'webhook') throw new Error(`COLD_PATH=${path}: post or webhook`);
  const VARIANTS = variants();
  const runId = `${Date.now().toString(36)}`;
  const scratch = scratchDatabase(base, 'cold_start');
  const kafka = new Kafka({ clientId: 'bench-cold-start', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const topic = `bench-cold-start-${runId}`;
  const groups: string[] = [];
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = startReceiver(secret, log);
  const results: StartResult[] = [];
  try {
    log(
      `database ${scratch.name}: (re)creating and migrating; ${path === 'post' ? 'POST' : 'POST -> webhook'} latency`,
    );
    await scratch.create();
    const prisma = createPrismaClient(scratch.url, 1, 'bench-cold-start-setup');
    const tenant = await createApiKey(prisma, `bench-cold-start-${runId}`);
    await prisma.$disconnect();
    await admin.connect();
    const hookUrl = await receiver.listen();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 6 }] });
    await warmTopic(kafka, topic);
    const db = new Client({ connectionString: scratch.url, application_name: 'bench-cold-start' });
    await db.connect();
    for (let i = 0; i < starts * VARIANTS.length; i++) {
      // Alternate, and swap the order every other pair: A B B A A B ...
      const pair = Math.floor(i / 2);
      const variant = VARIANTS[(i + (pair % 2)) % 2];
      // A group per start whose committed offsets are the topic's end: a consumer restarted in a deployment
      // that has nothing to catch up on. The topic is the run's: the broker has served it before.
      const groupId = `${topic}-${i}`;
      const ends = await admin.fetchTopicOffsets(topic);
      await admin.setOffsets({
        groupId,
        topic,
        partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
      });
      groups.push(groupId);
      await checkpoint(db, log, `start ${i + 1}`);
      const env = {
        DATABASE_URL: scratch.url,
        KAFKA_BROKERS: brokers.join(','),
        LOG_LEVEL: 'warn',
        TICKET_EVENTS_TOPIC: topic,
        ...variant.env,
      };
      const t0 = performance.now();
      const consumer =
        path === 'webhook'
          ? startChild(
              join(variant.root, 'apps', 'consumer', 'dist', 'main.js'),
              [...requireHooks(), ...CONSUMER_NODE_ARGS],
              {
                ...env,
                NOTIFIER_GROUP_ID: groupId,
                NOTIFIER_METRICS_PORT: '0',
                NOTIFY_WEBHOOK_URL: hookUrl,
                NOTIFY_WEBHOOK_SECRET: secret,
              },
            )
          : undefined;
      const api = await startApi({
        mainJs: apiMainJs(join(variant.root, 'dist')),
        nodeArgs: [...requireHooks(), ...API_NODE_ARGS],
        env,
        // Ready as a load balancer sees it, asked often so that the loop begins the moment it is.
        ready: { path: '/health/ready', pollMs: 20 },
      });
      try {
        if (consumer) await waitGroupStable(admin, groupId, consumer);
        const readyMs = performance.now() - t0;
        const created = new Set<string>();
        const samples = await openLoop(
          { baseUrl: api.baseUrl, apiKey: tenant.apiKey, runId: `${runId}-${i}`, created, log },
          rate,
          seconds,
        );
        let lat = samples.map((s) => (s.status === 201 && s.responded !== undefined ? s.responded - s.intended : NaN));
        if (consumer) {
          await waitForWebhooks(created, receiver.arrivals, 30_000, `start ${i + 1}`, log);
          lat = samples.map((s) => {
            const at = s.ticketId === undefined ? undefined : receiver.arrivals.get(s.ticketId)?.at;
            return at === undefined ? NaN : at - s.intended;
          });
        }
        const r = summarise(variant.name, readyMs, lat, rate);
        results.push(r);
        if (consumer) log(`  stages: ${await stageLines(db, kafka, topic, groupId, samples, receiver.arrivals, rate)}`);
        log(
          `start ${i + 1} (${variant.name}): ready in ${fixed(readyMs / 1000, 2)} s; first 10 max ${fixed(r.first10Max)} ms, ` +
            `first second p99 ${fixed(r.firstSecondP99)} max ${fixed(r.firstSecondMax)} ms; steady p99 ${fixed(r.steadyP99)} ms; failed ${r.bad}`,
        );
      } finally {
        await Promise.all([api.stop(), consumer?.stop()]);
      }
    }
    await db.end();
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.deleteGroups(groups).catch(() => undefined);
    await admin.disconnect();
    await receiver.close();
    await scratch.drop();
  }
  const rows = VARIANTS.map(({ name }) => {
    const rs = results.filter((r) => r.variant === name);
    const m = (f: (r: StartResult) => number) => median(rs.map(f));
    const each = (f: (r: StartResult) => number) => rs.map((r) => fixed(f(r))).join(', ');
    return (
      `| ${name} | ${rs.length} | ${fixed(m((r) => r.first10Max))} (${each((r) => r.first10Max)}) ` +
      `| ${fixed(m((r) => r.firstSecondP99))} (${each((r) => r.firstSecondP99)}) | ${fixed(m((r) => r.firstSecondMax))} ` +
      `| ${fixed(m((r) => r.steadyP99))} | ${fixed(
        m((r) => r.firstSecondP99 / r.steadyP99),
        2,
      )}× | ${rs.reduce((a, r) => a + r.bad, 0)} |`
    );
  });
  console.log(
    [
      `${path === 'post' ? 'POST' : 'POST -> signed webhook'} latency after a fresh start, open loop at ${rate} req/s for ${seconds} s per start (medians over the starts; each start's figure in brackets)`,
      '',
      '| API | starts | first 10 requests: max ms | first second: p99 ms | first second: max ms | steady (second half): p99 ms | first second p99 / steady p99 | failed |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n'),
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
