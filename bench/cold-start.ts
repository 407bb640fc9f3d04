// The first seconds after a start (issue #18, "no cold start"): POST latency of an API started fresh, as
// shipped (its relay running), under an open loop that begins the moment /health/ready answers 200,
// against the same API's steady state later in the same loop. Two variants alternate in one run, so the
// comparison is measured on the same box at the same time: the API as shipped (DB_POOL_WARM, default 4:
// connections opened and warmed before it listens) and DB_POOL_WARM=0 (every connection opened by a request).
//
//   npm run bench:fresh-pg -- dist/bench/cold-start.js
//
// Per start: a new API process on the bench's database (<DATABASE_URL's name>_cold_start, migrated once,
// dropped afterwards) and topic (deleted afterwards); open loop at COLD_RATE req/s (100) for COLD_SECONDS (10),
// a fresh Idempotency-Key per request; latency = response - intended send time (a late send counts against us).
// Reported per variant, median over its starts: p99 and max of the first second, max of the first 10 requests,
// p99 of the second half (the steady state), and the first second's p99 over the steady p99.
// Env: COLD_STARTS (6 per variant), COLD_RATE, COLD_SECONDS. Everything else the API inherits.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { configDefaults } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';
import { openLoop, type Sample } from './events-latency';
import { apiMainJs, startApi } from './support/api-process';
import { checkpoint } from './support/cpu-meter';
import { fixed, median, percentile } from './support/stats';
import { API_HEAP_CAP, positiveNumberEnv as num, requireHooks, scratchDatabase } from './support/paths';

patchKafkajsRequestQueue();

const VARIANTS = [
  { name: 'as shipped (DB_POOL_WARM default)', env: {} as Record<string, string> },
  { name: 'DB_POOL_WARM=0', env: { DB_POOL_WARM: '0' } },
];

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

async function waitReady(baseUrl: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${baseUrl}/health/ready`)).status === 200) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${baseUrl}/health/ready did not answer 200 within 60 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function summarise(variant: string, readyMs: number, samples: Sample[], rate: number): StartResult {
  const lat = samples.map((s) => (s.status === 201 && s.responded !== undefined ? s.responded - s.intended : NaN));
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

async function main(): Promise<void> {
  const base = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/tickets';
  const brokers = (process.env.KAFKA_BROKERS || configDefaults().kafka.brokers.join(',')).split(',');
  const starts = num('COLD_STARTS', 6);
  const rate = num('COLD_RATE', 100);
  const seconds = num('COLD_SECONDS', 10);
  const runId = `${Date.now().toString(36)}`;
  const scratch = scratchDatabase(base, 'cold_start');
  const topic = `bench-cold-start-${runId}`;
  const kafka = new Kafka({ clientId: 'bench-cold-start', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const results: StartResult[] = [];
  try {
    log(`database ${scratch.name}: (re)creating and migrating`);
    await scratch.create();
    const prisma = createPrismaClient(scratch.url, 1, 'bench-cold-start-setup');
    const tenant = await createApiKey(prisma, `bench-cold-start-${runId}`);
    await prisma.$disconnect();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 6 }] });
    const db = new Client({ connectionString: scratch.url, application_name: 'bench-cold-start' });
    await db.connect();
    for (let i = 0; i < starts * VARIANTS.length; i++) {
      // Alternate, and swap the order every other pair: A B B A A B ...
      const pair = Math.floor(i / 2);
      const variant = VARIANTS[(i + (pair % 2)) % 2];
      await checkpoint(db, log, `start ${i + 1}`);
      const t0 = performance.now();
      const api = await startApi({
        mainJs: apiMainJs(join(__dirname, '..')),
        nodeArgs: [...requireHooks(), ...API_HEAP_CAP],
        env: {
          DATABASE_URL: scratch.url,
          KAFKA_BROKERS: brokers.join(','),
          LOG_LEVEL: 'warn',
          TICKET_EVENTS_TOPIC: topic,
          ...variant.env,
        },
      });
      try {
        await waitReady(api.baseUrl);
        const readyMs = performance.now() - t0;
        const samples = await openLoop(
          { baseUrl: api.baseUrl, apiKey: tenant.apiKey, runId: `${runId}-${i}`, created: new Set(), log },
          rate,
          seconds,
        );
        const r = summarise(variant.name, readyMs, samples, rate);
        results.push(r);
        log(
          `start ${i + 1} (${variant.name}): ready in ${fixed(readyMs / 1000, 2)} s; first 10 max ${fixed(r.first10Max)} ms, ` +
            `first second p99 ${fixed(r.firstSecondP99)} max ${fixed(r.firstSecondMax)} ms; steady p99 ${fixed(r.steadyP99)} ms; non-201 ${r.bad}`,
        );
      } finally {
        await api.stop();
      }
    }
    await db.end();
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
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
      `POST latency after a fresh start, open loop at ${rate} req/s for ${seconds} s per start (medians over the starts; each start's figure in brackets)`,
      '',
      '| API | starts | first 10 requests: max ms | first second: p99 ms | first second: max ms | steady (second half): p99 ms | first second p99 / steady p99 | non-201 |',
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
