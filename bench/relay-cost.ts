// What the relay costs a create (issue #18): the API as shipped (RELAY_ENABLED=true, the relay inside
// it) against the same API with RELAY_ENABLED=false, at a FIXED create rate, CPU per create read from
// /proc for the API process, the database's Postgres processes and the broker's JVM.
//
//   npm run bench:relay-cost      (build, then node dist/bench/relay-cost.js)
//
// Each API gets a fresh database of its own (<DATABASE_URL's name>_relay_on / _relay_off, migrated,
// dropped afterwards): a relay publishes every unpublished row of its database, so the relay-off API's
// rows must not be there for it. The relay publishes to a fresh topic (deleted afterwards).
// Env: RELAY_COST_RATE (1000 creates/s: below what a 2-core box sustains with the relay on, so that both
// sides run at the rate and not at their saturation, where CPU per create grows with the queueing), RELAY_COST_SECONDS (10 per phase),
// RELAY_COST_WARMUP_SECONDS (10 per API, unmeasured: after 3, both sides' first round cost 20-60 % more than their
// later ones while V8 still compiled their code), RELAY_COST_ROUNDS (8: with 4, one VM gave 1.16-1.35x in 5 runs; the order
// alternates: off/on, on/off, ...), RELAY_COST_CONNECTIONS (32), BENCH_CPU_PROF=<dir> (V8 CPU profiles of both
// APIs), BENCH_BROKER_PID (the broker JVM; default: .cache/kafka/kafka.pid). Everything else the APIs inherit.
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import { Pool } from 'pg';
import { configDefaults } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { apiMainJs, cpuSecondsOf, memoryOf, startApi, type ApiChild } from './support/api-process';
import { brokerPid, checkpoint, postgresCpuSince, postgresCpuSnapshot } from './support/cpu-meter';
import { BODY_TEXT } from './support/three-inserts';
import { fixed, int, mb, median, percentile } from './support/stats';
import { API_NODE_ARGS, positiveNumberEnv as num, repoRoot, requireHooks, scratchDatabase } from './support/paths';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // the bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

const autocannon = require('autocannon') as (
  opts: Record<string, unknown>,
  cb: (err: Error | null, res: { errors: number; timeouts: number }) => void,
) => { on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void };

interface Side {
  name: 'relay on' | 'relay off';
  api: ApiChild;
  apiKey: string;
  pool: Pool;
}

interface Sample {
  side: Side['name'];
  creates: number;
  rate: number;
  bad: number;
  p99: number;
  /** CPU ms per create. */
  api: number;
  pg: number;
  broker: number;
  rssMb: number;
  /** Rows per acknowledged producer send (relay on only). */
  rowsPerSend: number;
  /** Rows the relay published during the phase (and its 300 ms tail), per create (relay on only). */
  publishedShare: number;
}

/** outbox_published_total and outbox_publish_sends_total of an API (its /metrics answers loopback without a token). */
async function relayCounters(api: ApiChild): Promise<{ published: number; sends: number }> {
  const text = await (await fetch(`${api.baseUrl}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { published: read('outbox_published_total'), sends: read('outbox_publish_sends_total') };
}

/** Fixed-rate creates against one API; CPU per create of the API, its database's Postgres and the broker. */
async function phase(side: Side, rate: number, seconds: number, connections: number, broker?: number): Promise<Sample> {
  let created = 0;
  let bad = 0;
  const lat: number[] = [];
  // Read before the CPU snapshots and after the CPU reads: rendering /metrics is not part of a create's cost.
  const relay0 = await relayCounters(side.api);
  const pg0 = await postgresCpuSnapshot(side.pool);
  const api0 = cpuSecondsOf(side.api.pid);
  const br0 = broker ? cpuSecondsOf(broker) : 0;
  const t0 = performance.now();
  let seq = 0;
  const prefix = `${side.name.replace(' ', '-')}-${Date.now().toString(36)}`;
  await new Promise<void>((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${side.api.baseUrl}/v1/tickets`,
        connections,
        overallRate: rate,
        duration: seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${side.apiKey}`, 'content-type': 'application/json' },
        body: BODY_TEXT,
        timeout: 30,
        requests: [
          {
            setupRequest: (req: { headers: Record<string, string> }) => ({
              ...req,
              headers: { ...req.headers, 'idempotency-key': `${prefix}-${++seq}` },
            }),
            onResponse: (status: number) => (status === 201 ? created++ : bad++),
          },
        ],
      },
      (err) => (err ? reject(err) : resolve()),
    );
    inst.on('response', (_c, _s, _b, ms) => lat.push(ms));
  });
  const secs = (performance.now() - t0) / 1000;
  // The relay publishes (and marks) a create a few ms after its commit: let the last ones finish inside the measurement.
  await new Promise((r) => setTimeout(r, 300));
  const apiSecs = cpuSecondsOf(side.api.pid) - api0;
  const brokerSecs = broker ? cpuSecondsOf(broker) - br0 : NaN;
  const pgSecs = await postgresCpuSince(side.pool, pg0);
  const relay1 = await relayCounters(side.api);
  const per = (cpuSecs: number) => (created > 0 ? (cpuSecs * 1000) / created : NaN);
  return {
    side: side.name,
    creates: created,
    rate: created / secs,
    bad,
    p99: percentile(lat, 0.99),
    api: per(apiSecs),
    pg: per(pgSecs),
    broker: per(brokerSecs),
    rssMb: mb(memoryOf(side.api.pid).rss),
    rowsPerSend: (relay1.published - relay0.published) / (relay1.sends - relay0.sends),
    publishedShare: (relay1.published - relay0.published) / created,
  };
}

export async function runRelayCostBench(): Promise<string> {
  const rate = num('RELAY_COST_RATE', 1000);
  const seconds = num('RELAY_COST_SECONDS', 10);
  const rounds = num('RELAY_COST_ROUNDS', 8);
  const warmup = num('RELAY_COST_WARMUP_SECONDS', 10);
  const connections = num('RELAY_COST_CONNECTIONS', 32);
  const cpuProfDir = process.env.BENCH_CPU_PROF;
  const base = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/tickets';
  const started = Date.now();
  const log = (line: string) => console.log(`[${fixed((Date.now() - started) / 1000).padStart(5)}s] ${line}`);
  const topic = `bench-relay-cost-${Date.now().toString(36)}`;
  const brokers = (process.env.KAFKA_BROKERS || configDefaults().kafka.brokers.join(',')).split(',');
  const broker = brokerPid(repoRoot());
  const dbs = { on: scratchDatabase(base, 'relay_on'), off: scratchDatabase(base, 'relay_off') };
  const sides: Side[] = [];
  try {
    log(`migrating ${dbs.on.name} and ${dbs.off.name}`);
    await dbs.on.create();
    await dbs.off.create();
    const nodeArgs = [...requireHooks(), ...API_NODE_ARGS];
    if (cpuProfDir) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`);
    for (const [i, [name, db]] of (
      [
        ['relay on', dbs.on],
        ['relay off', dbs.off],
      ] as const
    ).entries()) {
      const prisma = createPrismaClient(db.url, 1, 'bench-setup');
      const { apiKey } = await createApiKey(prisma, `relay-cost-${i}`);
      await prisma.$disconnect();
      const api = await startApi({
        mainJs: apiMainJs(join(__dirname, '..')),
        nodeArgs: cpuProfDir ? [...nodeArgs, '-r', join(__dirname, 'support', 'exit-on-sigterm.js')] : nodeArgs,
        env: {
          DATABASE_URL: db.url,
          LOG_LEVEL: 'warn',
          RELAY_ENABLED: name === 'relay on' ? 'true' : 'false',
          TICKET_EVENTS_TOPIC: topic,
          KAFKA_BROKERS: brokers.join(','),
        },
      });
      const pool = new Pool({ connectionString: db.url, max: 2, application_name: 'bench-relay-cost' });
      sides.push({ name, api, apiKey, pool });
      log(`${name}: API pid ${api.pid} on ${api.baseUrl}, RSS ${mb(memoryOf(api.pid).rss)} MB`);
    }
    log(`broker JVM: ${broker ? `pid ${broker}` : 'not found (set BENCH_BROKER_PID); its CPU is not counted'}`);
    await checkpoint(sides[0].pool, log, 'phases');
    for (const s of sides) log(`warm-up ${s.name}: ${fmt(await phase(s, rate, warmup, connections, broker))}`);
    const samples: Sample[] = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [sides[1], sides[0]] : [sides[0], sides[1]];
      for (const s of order) {
        const sample = await phase(s, rate, seconds, connections, broker);
        samples.push(sample);
        log(`round ${r + 1}/${rounds} ${fmt(sample)}`);
      }
    }
    return report(samples, {
      rate,
      seconds,
      warmup,
      rounds,
      connections,
      started,
      brokerCounted: broker !== undefined,
    });
  } finally {
    for (const s of sides) {
      await s.api.stop();
      await s.pool.end();
    }
    await dbs.on.drop().catch(() => undefined);
    await dbs.off.drop().catch(() => undefined);
    const kafka = new Kafka({ clientId: 'bench-relay-cost', brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin
      .connect()
      .then(() => admin.deleteTopics({ topics: [topic] }))
      .catch(() => undefined)
      .finally(() => admin.disconnect());
  }
}

/** The API's CPU per create, relay on over relay off, for each round (its two phases, in either order). */
function perRound(samples: Sample[]): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < samples.length; i += 2) {
    const on = samples[i].side === 'relay on' ? samples[i] : samples[i + 1];
    const off = samples[i].side === 'relay on' ? samples[i + 1] : samples[i];
    out.push(on.api / off.api);
  }
  return out;
}

const fmt = (s: Sample) =>
  `${s.side.padEnd(9)} ${int(s.rate).padStart(5)} creates/s  p99 ${fixed(s.p99).padStart(6)} ms  CPU ms/create: ` +
  `api ${fixed(s.api, 3)} pg ${fixed(s.pg, 3)} broker ${fixed(s.broker, 3)}  RSS ${s.rssMb} MB` +
  (Number.isFinite(s.rowsPerSend)
    ? `  ${fixed(s.rowsPerSend)} rows/send, ${fixed(100 * s.publishedShare)} % published`
    : '') +
  (s.bad ? `  UNEXPECTED ${s.bad}` : '');

function report(
  samples: Sample[],
  o: {
    rate: number;
    seconds: number;
    warmup: number;
    rounds: number;
    connections: number;
    started: number;
    brokerCounted: boolean;
  },
): string {
  const of = (side: Sample['side'], k: 'api' | 'pg' | 'broker' | 'p99' | 'rate' | 'rowsPerSend' | 'publishedShare') =>
    samples.filter((s) => s.side === side).map((s) => s[k]);
  const range = (v: number[], d = 3) =>
    `${fixed(median(v), d)} (${fixed(Math.min(...v), d)}-${fixed(Math.max(...v), d)})`;
  const ratio = (k: 'api' | 'pg' | 'broker') => median(of('relay on', k)) / median(of('relay off', k));
  const lines = [
    `## bench:relay-cost — ${new Date(o.started).toISOString()}`,
    '',
    `Node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )}; ${int(o.rate)} creates/s for ${o.seconds} s per phase after ${o.warmup} s of warm-up per API, ${o.rounds} rounds alternating, ${o.connections} connections; ` +
      `MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '(unset)'}.`,
    '',
    '| CPU ms per create (median, range) | API process | PostgreSQL | broker JVM | creates/s | p99 ms |',
    '|---|---|---|---|---|---|',
    ...(['relay on', 'relay off'] as const).map(
      (side) =>
        `| ${side} | ${range(of(side, 'api'))} | ${range(of(side, 'pg'))} | ${o.brokerCounted ? range(of(side, 'broker')) : 'n/a'} | ${range(of(side, 'rate'), 0)} | ${range(of(side, 'p99'), 1)} |`,
    ),
    `| on/off | ${fixed(ratio('api'), 2)}x | ${fixed(ratio('pg'), 2)}x | ${o.brokerCounted ? `+${fixed(median(of('relay on', 'broker')) - median(of('relay off', 'broker')), 3)} ms` : 'n/a'} | | |`,
    '',
    `API on/off within each round (its two phases run back to back): ${perRound(samples)
      .map((r) => `${fixed(r, 2)}x`)
      .join(', ')}.`,
    `Rows per producer send with the relay on: ${range(of('relay on', 'rowsPerSend'), 1)}; rows published within a phase (and its 300 ms tail) per create: ${range(of('relay on', 'publishedShare'), 3)}.`,
    `Bars (issue #18): API CPU per create on/off <= 1.15x: ${ratio('api') <= 1.15 ? 'PASS' : 'FAIL'}; PostgreSQL <= 1.1x: ${ratio('pg') <= 1.1 ? 'PASS' : 'FAIL'}.`,
    `Unexpected responses: ${samples.reduce((n, s) => n + s.bad, 0)}.`,
  ];
  const short = samples.filter((s) => s.rate < 0.95 * o.rate);
  if (short.length > 0)
    lines.push(
      `**${short.length} of ${samples.length} phases ran below 95 % of the rate** (${short.map((s) => `${s.side} ${int(s.rate)}/s`).join(', ')}): ` +
        'those measured the box at its saturation, where CPU per create grows with the queueing; lower RELAY_COST_RATE.',
    );
  const text = lines.join('\n') + '\n';
  console.log(`\n${text}`);
  return text;
}

if (require.main === module) {
  runRelayCostBench().then(
    () => process.exit(0),
    (e) => {
      console.error(`bench:relay-cost failed: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
