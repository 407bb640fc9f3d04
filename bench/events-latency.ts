// POST-to-webhook latency over the whole event path, as it runs in production (issue #3, part 3).
//
// Used by bench/events.bench.ts (`runLatencyBench()`); also runs alone:
//   node dist/bench/events-latency.js
//
// Starts, on a fresh database (<DATABASE_URL's name>_bench_events, migrated, dropped afterwards) and a
// fresh 6-partition topic (deleted afterwards):
//   API       apps/ticket-api/dist/main.js as a child process, RELAY_ENABLED=true (the relay runs inside it);
//   consumer  apps/consumer/dist/main.js as a child process, a unique NOTIFIER_GROUP_ID, NOTIFY_WEBHOOK_URL =
//   receiver  a webhook endpoint in this process (bench/support/webhook-receiver.ts: checks every Standard
//             Webhooks signature, answers 204, stamps each arrival; EVENTS_RECEIVER=process: in one of its own).
// Then:
//   1. warm-up: POSTs for 2 s at concurrency 8 (autocannon), until their webhooks arrived;
//   2. max POST rate: autocannon, 5 s at concurrency 32, a fresh Idempotency-Key per request; then waits
//      until every ticket created so far has had its webhook (the backlog drains);
//   3. EVENTS_OPEN_LOOPS (3) open loops at HALF that rate for 15 s each, one after the other: a timer
//      sends POST i at t0 + i/rate whatever the responses (keep-alive pool of up to 128 sockets); per
//      ticket, latency = webhook arrival (the receiver's stamp) - intended send time (so a late
//      scheduler or a full socket pool counts against us). Matched by the ticket id of the 201 body and
//      the webhook body's data.ticketId. Per stage (measureOpenLoop): API created_at, the Kafka
//      timestamp of the relay's send, the consumer's inbox statement, the webhook's arrival.
// Before the warm-up: CHECKPOINT (superuser), so that pages earlier runs dirtied are not written during the loops.
// Tuning goes through the environment only (the children inherit it): RELAY_POLL_INTERVAL,
// NOTIFY_CONCURRENCY, NOTIFY_POLL_INTERVAL, CONSUMER_PARTITIONS_CONCURRENCY, DB_POOL_MAX ... The bench
// sets LOG_LEVEL=warn, TICKET_EVENTS_TOPIC, NOTIFIER_GROUP_ID, NOTIFY_WEBHOOK_URL/_SECRET, DATABASE_URL;
// everything else is the application's default (reported in the "Step 3 settings" line).
// EVENTS_OPEN_LOOP_SECONDS (15), EVENTS_OPEN_LOOPS (3), EVENTS_MAX_SECONDS (5), EVENTS_MAX_CONCURRENCY (32), EVENTS_RATE (override
// the open-loop rate, req/s; default max/2), EVENTS_CPU_PROF=<dir> (V8 CPU profiles of both children),
// EVENTS_STALL_LOG=<dir> (each child's garbage collections and event-loop stalls, reported per open loop:
// bench/support/stall-log.ts).
// EVENTS_BROKER_WARMUP_SECONDS (30; 0: none): before the API and the consumer start, a raw producer and
// consumer group load the broker alone on a topic of its own, so that a broker JVM started just before
// (npm run kafka:up) has compiled its produce and fetch paths (bench/support/broker-warmup.ts); the
// broker's age and CPU through the warm-up are logged.
// BENCH_BROKER_PID: the broker JVM whose CPU is reported as Kafka's (default .cache/kafka/kafka.pid of this
// checkout; without it the broker's CPU counts as "other").
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { configDefaults, loadConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { apiMainJs, machineJiffies, memoryOf, processAgeSeconds, startApi, type ApiChild } from './support/api-process';
import { fixed, int, mb, percentile } from './support/stats';
import { brokerPid, checkpoint, cpuSecondsSince, cpuSnapshot } from './support/cpu-meter';
import { warmBroker, type BrokerWarmup } from './support/broker-warmup';
import {
  API_NODE_ARGS,
  CONSUMER_NODE_ARGS,
  repoRoot,
  requireHooks,
  positiveNumberEnv,
  scratchDatabase,
} from './support/paths';
import { startReceiver, type Arrival } from './support/webhook-receiver';
import { stealSampler, writebackSampler, type StealReport } from './support/box-samplers';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // the bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

// autocannon ships no types; the slice of its programmatic API used here.
interface AcResult {
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
const autocannon = require('autocannon') as (
  opts: Record<string, unknown>,
  cb: (err: Error | null, res: AcResult) => void,
) => { on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void };

export interface Percentiles {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface OpenLoopResult {
  rate: number;
  seconds: number;
  sent: number;
  created: number;
  /** Non-201 responses and transport errors. */
  failed: number;
  failedDetail: string;
  arrived: number;
  /** Webhook arrival - intended send time, ms. */
  e2e: Percentiles;
  /** p99 of e2e per WINDOW_SECONDS of intended send time, in order: where in the loop the tail is. */
  e2eWindowsP99: number[];
  /** POST response time measured from the intended send time, ms. */
  http: Percentiles;
  /** Actual send - intended send time (the scheduler's lateness), ms. */
  schedulerLag: Percentiles;
  /** Per-stage breakdown (ms, one clock): see STAGES. */
  stages: Record<string, Percentiles>;
  /** p99 of each stage per WINDOW_SECONDS of intended send time, in order (as e2eWindowsP99). */
  stageWindowsP99: Record<string, number[]>;
  /** CPU during the open loop, % of one core. */
  cpu: Record<string, number>;
  /** PostgreSQL transactions (all sessions of the bench database) per POST (approx.: the tail's are partly included). */
  xactPerTicket: number;
  /** Load average (1 min) at the end of the loop. */
  load1: number;
  /** Wall-clock time (epoch ms) of the loop's first intended send. */
  startedAt: number;
  /** The autovacuum workers seen in the bench database during the loop, and when (see autovacuumSampler). */
  autovacuum: string[];
  /** The kernel's writeback during the loop: its bursts and the total (see writebackSampler in bench/support/box-samplers.ts); undefined off Linux. */
  writeback?: { bursts: string[]; totalMb: number };
  /** CPU time the hypervisor took from the box during the loop (bench/support/box-samplers.ts); undefined off Linux. */
  steal?: StealReport;
  /** Under EVENTS_STALL_LOG: per child, its garbage collections and event-loop stalls in the loop (stallsIn). */
  stalls?: Record<string, string>;
}

export interface LatencyBenchResult {
  /** POST /v1/tickets 201/s, autocannon at `maxConcurrency` for `maxSeconds`, with relay and consumer running. */
  maxPostRate: number;
  maxPostP99Ms: number;
  /** Non-201 answers and socket errors in the max-rate phase. */
  maxPostBad: string;
  maxConcurrency: number;
  maxSeconds: number;
  /** Time from the end of the max-rate phase until every ticket's webhook had arrived (backlog drain). */
  backlog: { tickets: number; drainMs: number };
  /** The open loops, one after the other on the same processes, each after the previous one's webhooks all arrived. */
  loops: OpenLoopResult[];
  /** The API's scheduled reconciliation runs during the bench (RECONCILE_INTERVAL): when, against the loops. */
  reconcileRuns: string[];
  /** Webhooks seen more than once for the same ticket (all phases). */
  duplicates: number;
  unverified: number;
  /** VmHWM of the children at the end (relay runs inside the API). */
  apiPeakRssMb: number;
  consumerPeakRssMb: number;
  settings: Record<string, string>;
  /** The broker's age when the run began, and the warm-up it got before the API and the consumer started. */
  broker: { ageSeconds?: number; warmup?: BrokerWarmup };
}

const env = process.env;
const posNum = positiveNumberEnv;

/** The create request: ~1 KB of JSON (the same shape as bench:create's), no externalRef. */
const BODY_TEXT = JSON.stringify({
  title: 'Bench: the printer on floor 3 jams on every duplex job',
  description:
    'Since Monday the shared printer on floor 3 (HP LaserJet, asset 00417) jams whenever a job is printed double-sided. ' +
    'Single-sided jobs go through. The paper tray was refilled with the usual 80 g/m2 stock and the rollers were wiped; ' +
    'the jam happens at the duplex unit, the display shows error 13.B2.D1. Several people on the floor depend on it for ' +
    'contract printouts, so please send someone or tell us which other printer to use in the meantime.',
  priority: 'high',
  requester: { name: 'Bench Agent', email: 'agent@bench.example' },
  metadata: { source: 'bench-events', channel: 'agent', tags: ['printer', 'floor-3', 'duplex'] },
});

/** Settings worth reporting: the env the children see for the knobs that shape latency, with the app's defaults from libs/config. */
function knobs(): Array<[string, string]> {
  const d = configDefaults();
  return [
    ['RELAY_POLL_INTERVAL', `${d.relay.pollIntervalMs}ms`],
    ['RELAY_BATCH_SIZE', String(d.relay.batchSize)],
    ['DB_POOL_MAX', String(d.database.poolMax)],
    ['CONSUMER_PARTITIONS_CONCURRENCY', String(d.consumer.partitionsConcurrency)],
    ['NOTIFY_CONCURRENCY', String(d.notifier.concurrency)],
    ['NOTIFY_POLL_INTERVAL', `${d.notifier.pollIntervalMs}ms`],
    ['TICKET_EVENTS_PARTITIONS', String(d.kafka.partitions)],
  ];
}

const now = () => performance.now();
/** performance.now() on the wall clock (ms since the epoch), to compare with database timestamps. */
let wallOffset = Date.now() - performance.now();
const wall = (perf: number) => wallOffset + perf;

export function pct(values: number[]): Percentiles {
  return {
    n: values.length,
    p50: percentile(values, 0.5),
    p90: percentile(values, 0.9),
    p99: percentile(values, 0.99),
    max: values.length ? Math.max(...values) : NaN,
  };
}

export const fmtPct = (p: Percentiles) =>
  `p50 ${fixed(p.p50)}  p90 ${fixed(p.p90)}  p99 ${fixed(p.p99)}  max ${fixed(p.max)} ms (n=${p.n})`;

// ---------- the consumer child ----------

/** The API and consumer children while they run (so that a signal handler can stop them). */
export const latencyChildren = new Set<ChildProcess>();

export interface Child {
  pid: number;
  proc: ChildProcess;
  stderrTail(): string;
  stop(): Promise<void>;
}

export function startChild(mainJs: string, nodeArgs: string[], childEnv: Record<string, string>): Child {
  const proc = spawn(process.execPath, [...nodeArgs, mainJs], {
    env: { ...process.env, ...childEnv },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8_000)));
  return {
    pid: proc.pid!,
    proc,
    stderrTail: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}

// ---------- load ----------

export interface Ctx {
  baseUrl: string;
  apiKey: string;
  runId: string;
  /** Ticket ids of every 201 so far (all phases), for the drain wait. */
  created: Set<string>;
  log: (line: string) => void;
}

let keySeq = 0;

/** Closed loop (autocannon): `connections` connections for `seconds`, a fresh key per request. */
async function closedLoop(
  ctx: Ctx,
  connections: number,
  seconds: number,
): Promise<{ rate: number; p99: number; bad: number; badDetail: string }> {
  const lat: number[] = [];
  const codes = new Map<string, number>();
  let ok = 0;
  let bad = 0;
  const t0 = now();
  const res = await new Promise<AcResult>((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${ctx.baseUrl}/v1/tickets`,
        connections,
        duration: seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
        body: BODY_TEXT,
        timeout: 30,
        requests: [
          {
            setupRequest: (req: Record<string, unknown>) => ({
              ...req,
              headers: { ...(req.headers as object), 'idempotency-key': `ev-${ctx.runId}-${++keySeq}` },
            }),
            onResponse: (status: number, body: string) => {
              if (status !== 201) {
                bad++;
                const k = `${status} ${body.slice(0, 80)}`;
                codes.set(k, (codes.get(k) ?? 0) + 1);
                return;
              }
              ok++;
              try {
                ctx.created.add((JSON.parse(body) as { id: string }).id);
              } catch {
                bad++;
              }
            },
          },
        ],
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    );
    inst.on('response', (_c, _s, _b, ms) => lat.push(ms));
  });
  const secs = (now() - t0) / 1000;
  if (res.errors || res.timeouts) codes.set('socket errors/timeouts', res.errors + res.timeouts);
  return {
    rate: ok / secs,
    p99: percentile(lat, 0.99),
    bad: bad + res.errors + res.timeouts,
    badDetail: [...codes].map(([k, v]) => `${k}: ${v}`).join('; '),
  };
}

export interface Sample {
  intended: number;
  sent: number;
  responded?: number;
  status?: number;
  ticketId?: string;
  error?: string;
}

/** Open loop: request i is sent at t0 + i * 1000/rate, whatever happened to the earlier ones. */
export async function openLoop(ctx: Ctx, rate: number, seconds: number): Promise<Sample[]> {
  const url = new URL(ctx.baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const samples: Sample[] = [];
  const bodyLen = String(Buffer.byteLength(BODY_TEXT));
  let pendingResponses = 0;
  let allResponded!: () => void;
  const responded = new Promise<void>((r) => (allResponded = r));
  let scheduled = 0;
  const fire = (intended: number) => {
    const s: Sample = { intended, sent: now() };
    samples.push(s);
    pendingResponses++;
    const done = () => {
      s.responded ??= now();
      if (--pendingResponses === 0 && scheduled === total) allResponded();
    };
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: '/v1/tickets',
        method: 'POST',
        headers: {
          authorization: `Bearer ${ctx.apiKey}`,
          'content-type': 'application/json',
          'content-length': bodyLen,
          'idempotency-key': `ol-${ctx.runId}-${++keySeq}`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          s.responded = now();
          s.status = res.statusCode;
          if (res.statusCode === 201) {
            try {
              s.ticketId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id;
              ctx.created.add(s.ticketId);
            } catch (e) {
              s.error = `unparsable 201 body: ${(e as Error).message}`;
            }
          }
          done();
        });
        res.on('error', (e) => ((s.error = e.message), done()));
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => ((s.error = e.message), done()));
    req.end(BODY_TEXT);
  };
  const t0 = now() + 20;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const t = now();
      while (scheduled < total && t0 + scheduled * interval <= t) fire(t0 + scheduled++ * interval);
      if (scheduled >= total) return resolve();
      setTimeout(tick, Math.max(0, t0 + scheduled * interval - now() - 0.5));
    };
    setTimeout(tick, 20);
  });
  if (pendingResponses > 0) await Promise.race([responded, new Promise((r) => setTimeout(r, 35_000))]);
  agent.destroy();
  return samples;
}

/** Waits until every ticket in `ids` has had its webhook, or `timeoutMs`; logs progress every second. */
export async function waitForWebhooks(
  ids: Iterable<string>,
  arrivals: Map<string, Arrival>,
  timeoutMs: number,
  label: string,
  log: (l: string) => void,
): Promise<number> {
  const want = [...ids];
  const t0 = now();
  let lastLog = t0;
  for (;;) {
    const got = want.reduce((n, id) => n + (arrivals.has(id) ? 1 : 0), 0);
    if (got >= want.length) return now() - t0;
    if (now() - t0 > timeoutMs) {
      log(`  ${label}: gave up after ${fixed(timeoutMs / 1000, 0)} s with ${got}/${want.length} webhooks`);
      return now() - t0;
    }
    if (now() - lastLog >= 1000) {
      lastLog = now();
      log(`  ${label}: ${got}/${want.length} webhooks`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

// ---------- CPU ----------

/**
 * CPU per process group over a window, % of one core. Each group's pids are asked for at the start and at the
 * end (cpuSecondsSince): a process that started meanwhile counts all of its CPU (a pool's connection opened
 * during the loop); one that ended meanwhile counts nothing, its CPU in the window falling into "other" (a
 * backend that worked, went idle and was closed by its pool's idle timeout within the loop).
 */
async function cpuMeter(groups: Record<string, () => Promise<number[]> | number[]>) {
  const c0: Record<string, Map<number, number>> = {};
  for (const [k, pids] of Object.entries(groups)) c0[k] = cpuSnapshot(await pids());
  const t0 = now();
  const b0 = process.cpuUsage();
  const m0 = machineJiffies();
  return async () => {
    const secs = (now() - t0) / 1000;
    const b = process.cpuUsage(b0);
    const m = machineJiffies();
    const out: Record<string, number> = {};
    for (const [k, pids] of Object.entries(groups)) out[k] = (cpuSecondsSince(c0[k], await pids()) / secs) * 100;
    out.bench = ((b.user + b.system) / 1e6 / secs) * 100;
    const box = ((m.busy - m0.busy) / Math.max(1, m.total - m0.total)) * 100 * cpus().length;
    out.other = Math.max(0, box - Object.values(out).reduce((a, b2) => a + b2, 0));
    out.box = box;
    return out;
  };
}

// ---------- autovacuum ----------

/**
 * Samples the autovacuum workers of the bench database every 200 ms until the returned function is called,
 * which lists each as "VACUUM ANALYZE notifications 9.8-10.4 s" (seconds after the sampler started, the first
 * and the last sample that saw it; a run shorter than 200 ms may be missed). A fresh database fills from empty
 * in the bench's first phases, so every table crosses autovacuum's thresholds early on; this says when its
 * workers ran against the loops' tail. One short query per sample, on the bench's own connection.
 */
function autovacuumSampler(db: Client): () => Promise<string[]> {
  const t0 = now();
  const wall0 = Date.now();
  const seen = new Map<string, { what: string; first: number; last: number }>();
  // The relay's own VACUUM of its queue (queueVacuumRows) runs on a client connection: it is seen by the
  // table's vacuum_count, and when it ended by last_vacuum (too short to be caught in pg_stat_activity).
  const queueVacuums: string[] = [];
  let vacuumCount: number | undefined;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const q = await db.query<{ n: string; ended: Date | null }>(
        `SELECT vacuum_count AS n, last_vacuum AS ended FROM pg_stat_user_tables WHERE relid = 'outbox_pending'::regclass`,
      );
      const n = Number(q.rows[0]?.n ?? 0);
      if (vacuumCount !== undefined && n > vacuumCount && q.rows[0].ended)
        queueVacuums.push(
          `the relay's VACUUM outbox_pending${n - vacuumCount > 1 ? ` ×${n - vacuumCount}` : ''} ended ${fixed((q.rows[0].ended.getTime() - wall0) / 1000, 1)} s`,
        );
      vacuumCount = n;
      // Every database of the server: a fresh server's first autovacuum of its other databases (their catalogs,
      // filled by initdb) runs beside the bench too.
      const { rows } = await db.query<{ pid: number; query: string; other: string | null }>(
        `SELECT pid, query, CASE WHEN datname <> current_database() THEN datname END AS other FROM pg_stat_activity
          WHERE backend_type = 'autovacuum worker' AND query LIKE 'autovacuum:%'`,
      );
      const at = (now() - t0) / 1000;
      for (const r of rows) {
        const what =
          r.query.replace(/^autovacuum:\s*/, '').replace(/\bpublic\./, '') + (r.other ? ` (database ${r.other})` : '');
        const k = `${r.pid} ${what}`;
        const s = seen.get(k);
        if (s) s.last = at;
        else seen.set(k, { what, first: at, last: at });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return async () => {
    stopped = true;
    await sampling;
    return [...seen.values()].map((s) => `${s.what} ${fixed(s.first, 1)}-${fixed(s.last, 1)} s`).concat(queueVacuums);
  };
}

// ---------- one open loop, measured ----------

/** The open loops' latency is also reported per window of this many seconds of intended send time (EVENTS_WINDOW_SECONDS). */
const WINDOW_SECONDS = positiveNumberEnv('EVENTS_WINDOW_SECONDS', 5);

/** The stages of the path, from timestamps on one clock (this machine's): see measureOpenLoop. */
const STAGES = [
  'send -> API created_at',
  'created_at -> relay send (Kafka timestamp)',
  'relay send -> inbox statement',
  'inbox statement -> webhook arrival',
  // Not a stage: how long after the API's answer left the relay sent (negative: before it). The create
  // commits between created_at and the answer, so this bounds the relay's own delay from above.
  '(API answer -> relay send)',
] as const;

/**
 * Each record's Kafka timestamp (CreateTime: set by the relay's producer when it encodes the send),
 * by key (= ticket id), for the keys in `want`: read afterwards with a fresh group, so it costs nothing
 * during the measurement.
 */
export async function kafkaTimestamps(kafka: Kafka, topic: string, want: Set<string>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (want.size === 0) return out;
  const groupId = `bench-events-ts-${randomBytes(4).toString('hex')}`;
  const c = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  await c.connect();
  try {
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const key = m.key?.toString('utf8');
          if (key && want.has(key) && !out.has(key)) out.set(key, Number(m.timestamp));
        }
      },
    });
    const deadline = now() + 30_000;
    while (out.size < want.size && now() < deadline) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await c.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return out;
}

/**
 * Per ticket id: the API's created_at and the consumer group's inbox received_at (null before the inbox has
 * it), as epoch ms strings, on the database's clock.
 */
export async function ticketTimes(
  db: Client,
  groupId: string,
  ticketIds: string[],
): Promise<Map<string, { created_ms: string; received_ms: string | null }>> {
  const { rows } = await db.query<{ ticket_id: string; created_ms: string; received_ms: string | null }>(
    `SELECT o.aggregate_id::text AS ticket_id, extract(epoch FROM o.created_at) * 1000 AS created_ms,
            extract(epoch FROM i.received_at) * 1000 AS received_ms
       FROM outbox_events o LEFT JOIN ticket_events.inbox_events i ON i.event_id = o.event_id AND i.group_id = $1
      WHERE o.aggregate_id = ANY($2::uuid[])`,
    [groupId, ticketIds],
  );
  return new Map(rows.map((r) => [r.ticket_id, r]));
}

interface LoopDeps {
  db: Client;
  kafka: Kafka;
  topic: string;
  groupId: string;
  arrivals: Map<string, Arrival>;
  meter: () => Promise<() => Promise<Record<string, number>>>;
  /** Under EVENTS_STALL_LOG: each child's stall file (bench/support/stall-log.ts). */
  stallFiles?: Record<string, string>;
}

/**
 * One open loop at `rate` for `seconds`, then waits for its webhooks. Latency = webhook arrival -
 * intended send time. Stages, per ticket, on one clock: the API's created_at (the create
 * transaction's start), the Kafka timestamp of the event (the relay's send, after it was woken and
 * claimed the row), the consumer's inbox statement (received_at: after the broker's ack, the fetch
 * and the parse), the webhook's arrival here (after the dispatcher's wake-up, claim and POST).
 */
async function measureOpenLoop(ctx: Ctx, rate: number, seconds: number, d: LoopDeps): Promise<OpenLoopResult> {
  const before = d.arrivals.size;
  const xacts = async () =>
    Number(
      (
        await d.db.query<{ n: string }>(
          'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
        )
      ).rows[0].n,
    );
  const xact0 = await xacts();
  const meter = await d.meter();
  const progress = setInterval(() => ctx.log(`  ... ${d.arrivals.size - before} webhooks so far in this loop`), 5000);
  const vacuums = autovacuumSampler(d.db);
  const writeback = writebackSampler();
  const steal = stealSampler(WINDOW_SECONDS);
  const samples = await openLoop(ctx, rate, seconds);
  const stolen = steal();
  clearInterval(progress);
  const autovacuum = await vacuums();
  const written = await writeback();
  const cpu = await meter();
  const load1 = loadavg()[0];
  await new Promise((r) => setTimeout(r, 600)); // pg_stat_database is updated by the backends at most every 500 ms
  const xactPerTicket = ((await xacts()) - xact0) / Math.max(1, samples.length);
  const createdIds = samples.filter((s) => s.ticketId).map((s) => s.ticketId!);
  await waitForWebhooks(createdIds, d.arrivals, 30_000, 'open-loop tail', ctx.log);

  const e2e: number[] = [];
  const windows: number[][] = [];
  const t0 = samples.length > 0 ? samples[0].intended : 0;
  for (const s of samples) {
    const a = s.ticketId ? d.arrivals.get(s.ticketId) : undefined;
    if (!a) continue;
    e2e.push(a.at - s.intended);
    (windows[Math.floor((s.intended - t0) / 1000 / WINDOW_SECONDS)] ??= []).push(a.at - s.intended);
  }
  const failedCodes = new Map<string, number>();
  for (const s of samples)
    if (s.status !== 201)
      failedCodes.set(s.error ?? String(s.status), (failedCodes.get(s.error ?? String(s.status)) ?? 0) + 1);

  const byTicket = await ticketTimes(d.db, d.groupId, createdIds);
  const sentAt = await kafkaTimestamps(d.kafka, d.topic, new Set(createdIds));
  const stage: Record<(typeof STAGES)[number], number[]> = Object.fromEntries(
    STAGES.map((k) => [k, [] as number[]]),
  ) as never;
  const stageWindows: Record<string, number[][]> = Object.fromEntries(STAGES.map((k) => [k, [] as number[][]]));
  const add = (k: (typeof STAGES)[number], s: Sample, v: number) => {
    stage[k].push(v);
    (stageWindows[k][Math.floor((s.intended - t0) / 1000 / WINDOW_SECONDS)] ??= []).push(v);
  };
  for (const s of samples) {
    const r = s.ticketId ? byTicket.get(s.ticketId) : undefined;
    const a = s.ticketId ? d.arrivals.get(s.ticketId) : undefined;
    const k = s.ticketId ? sentAt.get(s.ticketId) : undefined;
    if (!r || !a || k === undefined || r.received_ms === null) continue;
    const [c, i] = [Number(r.created_ms), Number(r.received_ms)];
    add('send -> API created_at', s, c - wall(s.intended));
    add('created_at -> relay send (Kafka timestamp)', s, k - c);
    add('relay send -> inbox statement', s, i - k);
    add('inbox statement -> webhook arrival', s, wall(a.at) - i);
    if (s.responded !== undefined) add('(API answer -> relay send)', s, k - wall(s.responded));
  }
  return {
    rate,
    seconds,
    sent: samples.length,
    created: createdIds.length,
    failed: samples.length - createdIds.length,
    failedDetail: [...failedCodes].map(([k, v]) => `${k}: ${v}`).join(', '),
    arrived: e2e.length,
    e2e: pct(e2e),
    e2eWindowsP99: [...windows].map((w) => (w ? pct(w).p99 : NaN)),
    http: pct(samples.filter((s) => s.responded !== undefined).map((s) => s.responded! - s.intended)),
    schedulerLag: pct(samples.map((s) => s.sent - s.intended)),
    stages: Object.fromEntries(Object.entries(stage).map(([k, v]) => [k, pct(v)])),
    stageWindowsP99: Object.fromEntries(
      Object.entries(stageWindows).map(([k, ws]) => [k, [...ws].map((w) => (w ? pct(w).p99 : NaN))]),
    ),
    cpu,
    xactPerTicket,
    load1,
    startedAt: wall(t0),
    autovacuum,
    writeback: written,
    steal: stolen,
    ...(d.stallFiles
      ? {
          stalls: Object.fromEntries(
            Object.entries(d.stallFiles).map(([k, f]) => [k, stallsIn(f, wall(t0), wall(t0) + seconds * 1000)]),
          ),
        }
      : {}),
  };
}

/**
 * What a child's stall file (bench/support/stall-log.ts) holds between `from` and `to` (epoch ms): the count
 * and total of its collections of 2 ms or more per kind, and its five longest event-loop stalls with their
 * second in the loop.
 */
function stallsIn(file: string, from: number, to: number): string {
  if (!existsSync(file)) return 'no stall file';
  const gc = new Map<string, { n: number; total: number; max: number }>();
  const lags: Array<{ at: number; ms: number }> = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [at, what, kind, ms] = line.split(' ');
    const t = Number(at);
    if (!(t >= from && t <= to)) continue;
    if (what === 'gc') {
      const g = gc.get(kind) ?? { n: 0, total: 0, max: 0 };
      g.n++;
      g.total += Number(ms);
      g.max = Math.max(g.max, Number(ms));
      gc.set(kind, g);
    } else if (what === 'lag') lags.push({ at: (t - from) / 1000, ms: Number(ms) });
  }
  const gcText = [...gc].map(([k, g]) => `${k} GC ${g.n}× (${fixed(g.total)} ms, longest ${fixed(g.max)})`).join(', ');
  const lagText = lags
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map((l) => `${fixed(l.ms)} ms at ${fixed(l.at)} s`)
    .join(', ');
  return `${gcText || 'no GC of 2 ms or more'}; loop stalls of 20 ms or more: ${lags.length}${lagText ? ` (${lagText})` : ''}`;
}

/**
 * Where each scheduled reconciliation of the run fell (reconcile_runs, trigger schedule): the API's first
 * look is about a minute after its start, on a fresh database, so its first run lands in a loop.
 */
async function reconcileRunsAgainstLoops(db: Client, loops: OpenLoopResult[]): Promise<string[]> {
  const { rows } = await db.query<{ s: string; f: string }>(
    `SELECT extract(epoch FROM started_at) * 1000 AS s, extract(epoch FROM finished_at) * 1000 AS f
       FROM reconcile_runs WHERE trigger = 'schedule' ORDER BY started_at`,
  );
  return rows.map(({ s, f }) => {
    const [start, end] = [Number(s), Number(f)];
    const i = loops.findIndex((l) => start < l.startedAt + l.seconds * 1000 && end > l.startedAt);
    const where =
      i < 0
        ? 'outside the open loops'
        : `${fixed((start - loops[i].startedAt) / 1000, 1)}-${fixed((end - loops[i].startedAt) / 1000, 1)} s into open loop ${i + 1}`;
    return `scheduled reconciliation ${where} (${fixed((end - start) / 1000, 2)} s)`;
  });
}

// ---------- the run ----------

export async function runLatencyBench(opts: { log?: (line: string) => void } = {}): Promise<LatencyBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const config = loadConfig();
  const openSeconds = posNum('EVENTS_OPEN_LOOP_SECONDS', 15);
  const openLoops = posNum('EVENTS_OPEN_LOOPS', 3);
  const maxSeconds = posNum('EVENTS_MAX_SECONDS', 5);
  const maxConcurrency = posNum('EVENTS_MAX_CONCURRENCY', 32);
  const runId = randomBytes(4).toString('hex');
  wallOffset = Date.now() - performance.now();
  const scratch = scratchDatabase(config.database.url, 'bench_events', env);
  const { name: dbName, url } = scratch;
  const topic = `bench-events-${runId}`;
  const groupId = `bench-events-notifier-${runId}`;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const kafka = new Kafka({ brokers: config.kafka.brokers, clientId: 'bench-events', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const receiver = startReceiver(secret, log);
  const distRoot = join(__dirname, '..');
  const nodeArgs = requireHooks();
  const cpuProfDir = env.EVENTS_CPU_PROF;
  const stallDir = env.EVENTS_STALL_LOG;
  const stallFiles = stallDir
    ? { api: join(stallDir, `api-${runId}.log`), consumer: join(stallDir, `consumer-${runId}.log`) }
    : undefined;
  if (stallDir) mkdirSync(stallDir, { recursive: true });
  const stallArgs = stallDir ? ['-r', join(__dirname, 'support', 'stall-log.js')] : [];
  // API and consumer run as the project runs them (heap capped).
  // EVENTS_API_NODE_ARGS, EVENTS_CONSUMER_NODE_ARGS: more Node/V8 flags for one child, after its heap cap (trials
  // of V8's settings; V8 flags other than the heap caps are refused in NODE_OPTIONS).
  const extraArgs = (name: string) =>
    (env[`EVENTS_${name.toUpperCase()}_NODE_ARGS`] ?? '').split(/\s+/).filter(Boolean);
  const childArgs = (name: string) => {
    const extra = extraArgs(name);
    const cap = [...(name === 'api' ? API_NODE_ARGS : CONSUMER_NODE_ARGS), ...extra, ...stallArgs];
    log(`${name}: node ${cap.join(' ')}${extra.length ? ` (with EVENTS_${name.toUpperCase()}_NODE_ARGS)` : ''}`);
    return cpuProfDir
      ? [
          ...nodeArgs,
          ...cap,
          '--cpu-prof',
          `--cpu-prof-dir=${cpuProfDir}`,
          `--cpu-prof-name=${name}-${runId}.cpuprofile`,
          '-r',
          join(__dirname, 'support', 'exit-on-sigterm.js'),
        ]
      : [...nodeArgs, ...cap];
  };
  const settings: Record<string, string> = Object.fromEntries(
    knobs().map(([k, d]) => [k, env[k] ? `${env[k]} (env)` : `${d} (app default)`]),
  );

  let api: ApiChild | undefined;
  let consumer: Child | undefined;
  let db: Client | undefined;
  let topicCreated = false;
  try {
    // The children inherit it; npm start and the npm scripts set 2 (scripts/lib.sh), a bare `node` leaves glibc's default.
    log(
      `MALLOC_ARENA_MAX=${env.MALLOC_ARENA_MAX ?? "(unset: glibc's default; npm start and npm run set 2)"} for the API and the consumer`,
    );
    log(`database ${dbName}: (re)creating and migrating`);
    await scratch.create();
    const prisma = createPrismaClient(url, 1, 'bench-events-setup');
    const tenant = await createApiKey(prisma, `bench-events-${runId}`);
    await prisma.$disconnect();
    db = new Client({ connectionString: url, application_name: 'bench-events' });
    await db.connect();
    await checkpoint(db, log, 'loops'); // before the warm-up (docs/benchmarks.md, "After the kafkajs request-queue patch")

    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: config.kafka.partitions }] });
    topicCreated = true;
    const hookUrl = await receiver.listen();
    log(`topic ${topic} (${config.kafka.partitions} partitions), webhook receiver ${hookUrl}`);

    const broker = brokerPid(repoRoot());
    const brokerAge = broker ? processAgeSeconds(broker) : undefined;
    const warmupSeconds = env.EVENTS_BROKER_WARMUP_SECONDS === '0' ? 0 : posNum('EVENTS_BROKER_WARMUP_SECONDS', 30);
    log(
      `broker: ${broker ? `pid ${broker}, up ${brokerAge === undefined ? '?' : int(brokerAge)} s` : 'pid unknown (BENCH_BROKER_PID)'}; ` +
        (warmupSeconds
          ? `warming it alone for ${warmupSeconds} s (EVENTS_BROKER_WARMUP_SECONDS=0: none)`
          : 'no warm-up'),
    );
    const brokerWarmup: BrokerWarmup | undefined = warmupSeconds
      ? await warmBroker({
          kafka,
          seconds: warmupSeconds,
          partitions: config.kafka.partitions,
          brokerPid: broker,
          log,
        })
      : undefined;

    const common = {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
      KAFKA_BROKERS: config.kafka.brokers.join(','),
      TICKET_EVENTS_TOPIC: topic,
    };
    api = await startApi({
      mainJs: apiMainJs(distRoot),
      nodeArgs: childArgs('api'),
      env: {
        ...common,
        RELAY_ENABLED: 'true',
        ...(stallFiles ? { BENCH_STALL_LOG_FILE: stallFiles.api } : {}),
      },
    });
    latencyChildren.add(api.proc);
    consumer = startChild(join(distRoot, '..', 'apps', 'consumer', 'dist', 'main.js'), childArgs('consumer'), {
      ...common,
      NOTIFIER_GROUP_ID: groupId,
      NOTIFIER_METRICS_PORT: '0',
      NOTIFY_WEBHOOK_URL: hookUrl,
      NOTIFY_WEBHOOK_SECRET: secret,
      ...(stallFiles ? { BENCH_STALL_LOG_FILE: stallFiles.consumer } : {}),
    });
    latencyChildren.add(consumer.proc);
    log(`API pid ${api.pid} on ${api.baseUrl} (relay inside), consumer pid ${consumer.pid} (group ${groupId})`);
    log(
      `settings: ${Object.entries(settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    );

    const ctx: Ctx = { baseUrl: api.baseUrl, apiKey: tenant.apiKey, runId, created: new Set(), log };
    // Wait until the consumer has joined its group and the path works: one ticket end to end.
    log('first ticket end to end (consumer joins its group) ...');
    const first = await openLoop(ctx, 1, 1);
    if (first[0]?.status !== 201)
      throw new Error(`first POST failed: ${first[0]?.status ?? first[0]?.error}: ${api.stderrTail()}`);
    await waitForWebhooks(ctx.created, receiver.arrivals, 60_000, 'first', log);
    if (!receiver.arrivals.has(first[0].ticketId!))
      throw new Error(
        `no webhook within 60 s; consumer stderr: ${consumer.stderrTail()}; API stderr: ${api.stderrTail()}`,
      );
    log(`  first ticket: ${fixed(receiver.arrivals.get(first[0].ticketId!)!.at - first[0].intended)} ms`);

    log('warm-up: 2 s at concurrency 8');
    const w = await closedLoop(ctx, 8, 2);
    log(`  ${int(w.rate)} req/s; waiting for its webhooks`);
    await waitForWebhooks(ctx.created, receiver.arrivals, 60_000, 'warm-up', log);

    log(
      `max POST rate: autocannon ${maxSeconds} s at concurrency ${maxConcurrency}, fresh keys, relay + consumer running`,
    );
    const max = await closedLoop(ctx, maxConcurrency, maxSeconds);
    log(
      `  ${int(max.rate)} req/s (p99 ${fixed(max.p99)} ms)${max.bad ? `, ${max.bad} non-201/errors (${max.badDetail})` : ''}`,
    );
    const backlogTickets = ctx.created.size;
    const drainMs = await waitForWebhooks(ctx.created, receiver.arrivals, 120_000, 'backlog', log);
    log(`  backlog drained: every webhook in ${fixed(drainMs / 1000, 2)} s after the max-rate phase`);

    const rate = env.EVENTS_RATE ? posNum('EVENTS_RATE', 1) : Math.max(1, Math.round(max.rate / 2));
    // The bench database's backends (pools open and close connections) and the server's background processes.
    const pgPids = async () =>
      (
        await db!.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL',
        )
      ).rows.map((r) => r.pid);
    const loops: OpenLoopResult[] = [];
    for (let loop = 1; loop <= openLoops; loop++) {
      log(
        `open loop ${loop}/${openLoops}: ${rate} req/s (${env.EVENTS_RATE ? `EVENTS_RATE; the max was ${int(max.rate)}` : 'half the max'}) for ${openSeconds} s`,
      );
      const r = await measureOpenLoop(ctx, rate, openSeconds, {
        db,
        kafka,
        topic,
        groupId,
        arrivals: receiver.arrivals,
        stallFiles,
        meter: () =>
          cpuMeter({
            api: () => [api!.pid],
            consumer: () => [consumer!.pid],
            postgres: pgPids,
            ...(broker ? { kafka: () => [broker] } : {}),
            ...(receiver.pid() ? { receiver: () => [receiver.pid()!] } : {}),
          }),
      });
      log(
        `  p50 ${fixed(r.e2e.p50)} / p99 ${fixed(r.e2e.p99)} ms, ${r.arrived}/${r.created} arrived; load ${fixed(r.load1, 2)}`,
      );
      loops.push(r);
    }

    const reconcileRuns = await reconcileRunsAgainstLoops(db, loops); // in the report (formatLatency)
    const apiMem = memoryOf(api.pid);
    const consumerMem = memoryOf(consumer.pid);
    const rstats = receiver.stats();
    return {
      maxPostRate: max.rate,
      maxPostP99Ms: max.p99,
      maxPostBad: max.bad ? `${max.bad} (${max.badDetail})` : '0',
      maxConcurrency,
      maxSeconds,
      backlog: { tickets: backlogTickets, drainMs },
      loops,
      reconcileRuns,
      duplicates: rstats.duplicates,
      unverified: rstats.unverified,
      apiPeakRssMb: mb(apiMem.hwm),
      consumerPeakRssMb: mb(consumerMem.hwm),
      settings,
      broker: { ageSeconds: brokerAge, warmup: brokerWarmup },
    };
  } finally {
    if (consumer) {
      await consumer.stop();
      if (consumer.proc.exitCode !== 0 && consumer.proc.exitCode !== null)
        log(`consumer exited with ${consumer.proc.exitCode}: ${consumer.stderrTail()}`);
    }
    await api?.stop();
    latencyChildren.clear();
    await receiver.close();
    if (topicCreated)
      await admin
        .deleteTopics({ topics: [topic] })
        .catch((e) => log(`could not delete topic ${topic}: ${(e as Error).message}`));
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await db?.end().catch(() => undefined);
    await scratch.drop().catch((e) => log(`could not drop ${dbName}: ${(e as Error).message}`));
  }
}

export function formatLatency(r: LatencyBenchResult): string {
  const w = r.broker.warmup;
  const lines = [
    `broker up ${r.broker.ageSeconds === undefined ? '?' : int(r.broker.ageSeconds)} s at the start; ` +
      (w
        ? `warmed alone for ${w.seconds} s (${int(w.sends)} sends, ${int(w.fetched)} records fetched${w.brokerCpuUsPerSend.length ? `; the broker's CPU per send, 5 s windows: ${w.brokerCpuUsPerSend.map((us) => int(us)).join(', ')} µs` : ''})`
        : 'no broker warm-up'),
    `max POST rate ${int(r.maxPostRate)} req/s (autocannon ${r.maxSeconds} s, concurrency ${r.maxConcurrency}, p99 ${fixed(r.maxPostP99Ms)} ms, non-201 ${r.maxPostBad}); ` +
      `its ${int(r.backlog.tickets)} tickets' webhooks all arrived ${fixed(r.backlog.drainMs / 1000, 2)} s after it ended`,
  ];
  r.loops.forEach((l, i) => {
    lines.push(
      `open loop ${i + 1}/${r.loops.length}: ${l.rate} req/s for ${l.seconds} s: sent ${l.sent}, 201 ${l.created}, failed ${l.failed}${l.failedDetail ? ` (${l.failedDetail})` : ''}, webhooks arrived ${l.arrived}/${l.created}; load average ${fixed(l.load1, 2)}`,
      `  POST -> webhook  ${fmtPct(l.e2e)}`,
      `    p99 per ${WINDOW_SECONDS} s of the loop: ${l.e2eWindowsP99.map((v) => fixed(v)).join(', ')} ms`,
      `  POST response    ${fmtPct(l.http)}`,
      `  scheduler lag    ${fmtPct(l.schedulerLag)}`,
      ...Object.entries(l.stages).map(
        ([k, v]) =>
          `    ${k.padEnd(44)} ${fmtPct(v)}; p99 per ${WINDOW_SECONDS} s: ${(l.stageWindowsP99[k] ?? []).map((w) => fixed(w)).join(', ')}`,
      ),
      `  CPU % of one core: ${Object.entries(l.cpu)
        .map(([k, v]) => `${k} ${int(v)}`)
        .join(', ')}; ` +
        `${fixed(l.xactPerTicket, 1)} PostgreSQL transactions per ticket; CPU per ticket ${fixed(((l.cpu.box - l.cpu.other) * 10) / l.rate, 1)} ms (all processes but "other")`,
      `  vacuum in the loop (into it): ${l.autovacuum.length ? l.autovacuum.join(', ') : 'none seen'}`,
      ...(l.writeback
        ? [
            `  kernel writeback in the loop (into it): ${fixed(l.writeback.totalMb, 1)} MB${l.writeback.bursts.length ? `; bursts of 1 MB or more per 200 ms: ${l.writeback.bursts.join(', ')}` : ''}`,
          ]
        : []),
      ...(l.steal
        ? [
            `  stolen by the hypervisor (steal): ${fixed(l.steal.totalMs, 0)} ms of CPU in the loop; per ${WINDOW_SECONDS} s: ${l.steal.perWindowMs.map((v) => fixed(v, 0)).join(', ')} ms${l.steal.bursts.length ? `; 20 ms or more per 100 ms: ${l.steal.bursts.join(', ')}` : ''}`,
          ]
        : []),
      ...Object.entries(l.stalls ?? {}).map(([k, v]) => `  ${k}: ${v}`),
    );
  });
  lines.push(
    ...(r.reconcileRuns.length ? r.reconcileRuns : ['no scheduled reconciliation ran (RECONCILE_INTERVAL)']),
    `duplicates ${r.duplicates}, bad signatures ${r.unverified} (all phases); peak RSS (VmHWM): API + relay ${r.apiPeakRssMb} MB, consumer ${r.consumerPeakRssMb} MB`,
  );
  return lines.join('\n');
}

if (require.main === module) {
  runLatencyBench({ log: (l) => process.stderr.write(`${l}\n`) }).then(
    (r) => {
      console.log(formatLatency(r));
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
