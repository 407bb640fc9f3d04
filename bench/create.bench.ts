// POST /v1/tickets against two references measured in the same run (issue #13).
//
//   npm run bench:create          (build, then node dist/bench/create.bench.js)
//
// Env: BENCH_DATABASE_URL (default: DATABASE_URL if its database is *_bench, else DATABASE_URL's server with
// database tickets_bench, else postgresql://postgres@127.0.0.1:5432/tickets_bench; the name must end in
// "bench": the bench creates and migrates it, TRUNCATES its ticket tables and re-creates the schema
// bench_plain at the start), BENCH_CONCURRENCY (32), BENCH_SECONDS per measured phase (6), BENCH_ROUNDS (3),
// BENCH_WARMUP_SECONDS (2), BENCH_POOL (the API's DB_POOL_MAX; default = concurrency; the references' pool is
// always = concurrency), BENCH_CPU_PROF=<dir> (write a V8 CPU profile of the API child there),
// BENCH_API_NODE_ARGS (extra node options for the API child, e.g. "--max-old-space-size=128").
// Connections: three API processes keep pools of BENCH_POOL, min(8, BENCH_POOL) and BENCH_POOL open, and a
// reference phase opens BENCH_CONCURRENCY more (closed after it): about 120 at the defaults, past
// PostgreSQL's default max_connections of 100. The bench checks before the first reference phase and
// stops with the setting to raise (a phase past the limit would measure "too many clients" 503s).
//
// Phases: warm-up (API creates, then both references), then BENCH_ROUNDS rounds of plain -> schema -> API
// create -> API replay -> replay through the database, interleaved so drift on a shared box hits all alike. Reported: median req/s of
// the rounds with their spread, median p50/p99, the per-round ratios (median), CPU per request per process,
// and the API child's peak RSS.
//   (a) plain   in-process loop, `concurrency` workers on a pg.Pool of the same size: BEGIN; INSERT tickets;
//               INSERT idempotency_keys; INSERT outbox_events; COMMIT (same columns and payload sizes as the API)
//               into the schema bench_plain: the same column types, primary keys only, no trigger, no
//               secondary index (bench/support/three-inserts.ts).
//   (b) schema  the same transaction on the project's tables (public, built by the migrations: every
//               secondary index fires).
//   (c) create  autocannon, `concurrency` connections, POST /v1/tickets, a new Idempotency-Key per request;
//               counts 201s without Idempotent-Replayed.
//   (c') replay the same, cycling through the newest of the keys the round's create phase got a 201 for (at
//               most half of what the API's cache holds (IDEMPOTENCY_REPLAY_CACHE_SIZE, IDEMPOTENCY_REPLAY_CACHE_MB), so that they are all in its cache; same body);
//               counts 201s with Idempotent-Replayed: true. The API answers them from its in-process cache
//               unless IDEMPOTENCY_REPLAY_CACHE_SIZE=0 is set (the child inherits the environment).
//   (r) create, relay running: (c) against a third API process as it ships (RELAY_ENABLED=true: its relay publishes
//               every create to Kafka, topic bench-create-<run>, deleted afterwards), on a database of its own
//               (<bench database>_relay: a relay publishes every unpublished row of its database, and (b)'s rows are
//               not events). CPU per create counts the broker's JVM too (BENCH_BROKER_PID, default
//               .cache/kafka/kafka.pid): the bare transaction publishes nothing.
//   (c'') replay through the database: the same keys, sent to a second API process (same database, started
//               with IDEMPOTENCY_REPLAY_CACHE_SIZE=0 and DB_POOL_MAX=min(8, pool)): what a retry that reaches
//               another instance, or comes after the cache evicted its key, costs.
// Bars (issue #13, #18): create >= 0.6x (a) with the relay running and without, relay running >= 0.85x relay off, replay from the cache >= 3x create, replay through the database
// >= 1.2x create at no more API CPU per request than a create, API
// peak RSS < 200 MB (the first API process, which serves (c) and (c')). The exit code is 0
// whatever the bars say (1 only when the bench itself cannot run).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import { Pool } from 'pg';
import { configDefaults, loadConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { apiMainJs, cpuSecondsOf, memoryOf, rssSampler, startApi, type ApiChild } from './support/api-process';
import { brokerPid, checkpoint, cpuMeter, type CpuShares } from './support/cpu-meter';
import { BODY_TEXT, plainTablesDdl, runThreeInsertLoop } from './support/three-inserts';
import { fixed, int, mb, median, percentile, spreadPct } from './support/stats';
import { API_NODE_ARGS, repoRoot, requireHooks, positiveNumberEnv, scratchDatabase } from './support/paths';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // the bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

// autocannon ships no types; the slice of its programmatic API used here.
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}
interface AcOptions {
  url: string;
  connections: number;
  duration: number;
  method: string;
  headers: Record<string, string>;
  body: string;
  timeout: number;
  requests: Array<{
    setupRequest: (req: AcRequest, context: Record<string, unknown>) => AcRequest;
    onResponse: (
      status: number,
      body: string,
      context: Record<string, unknown>,
      headers: Record<string, string | string[]>,
    ) => void;
  }>;
}
interface AcResult {
  duration: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
interface AcInstance {
  on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
const autocannon = require('autocannon') as (
  opts: AcOptions,
  cb: (err: Error | null, res: AcResult) => void,
) => AcInstance;

const DEFAULT_URL = 'postgresql://postgres@127.0.0.1:5432/tickets_bench';
const env = process.env;
const num = positiveNumberEnv;

/** DB_POOL_MAX of the second API process, which serves (c''). */
const DB_REPLAY_POOL = 8;

/** The schema the bench creates for reference (a). */
const PLAIN_SCHEMA = 'bench_plain';

interface Phase {
  name: string;
  ok: number;
  bad: number;
  badDetail: string;
  seconds: number;
  rate: number;
  p50: number;
  p99: number;
  /** CPU use during the phase, % of one core: the API child, this process, all postgres processes, everything else. */
  cpu: CpuShares;
  /** The broker JVM's CPU during the phase, % of one core (only for (r), whose relay publishes). */
  broker?: number;
}

/** An API process a phase sends to: its own database (pool, for the meter) and key when it is not the first API's. */
interface Target {
  baseUrl: string;
  pid: number;
  apiKey?: string;
  pool?: Pool;
  brokerPid?: number;
}

interface Ctx {
  baseUrl: string;
  apiKey: string;
  apiPid: number;
  /** The second API process (replay cache off) for (c''). */
  dbReplay: Target;
  /** The API process with its relay running (r), on a database of its own. */
  relay: Target;
  /** A small pool for the meters and the counts: the references open their own per phase. */
  pool: Pool;
  /** The bench database's URL: each reference phase opens a pool of `concurrency` on it and closes it after. */
  url: string;
  concurrency: number;
  runId: string;
  log: (line: string) => void;
}

// ---------- references (a) and (b): BEGIN + 3 INSERT + COMMIT over pg ----------

/**
 * The references' pool lives for one phase: opened in full before the meter starts (like the API's pool
 * after warm-up), closed after it, so that its connections never sit idle beside the three API processes'
 * pools (together they would pass PostgreSQL's default max_connections of 100).
 */
async function runReference(ctx: Ctx, schema: string, tenantId: string, seconds: number, name: string): Promise<Phase> {
  const pool = new Pool({
    connectionString: ctx.url,
    max: ctx.concurrency,
    application_name: 'bench-references',
    idleTimeoutMillis: 0,
  });
  try {
    await Promise.all(Array.from({ length: ctx.concurrency }, () => pool.connect().then((c) => c.release())));
    const meter = await cpuMeter(ctx.pool, ctx.apiPid);
    const r = await runThreeInsertLoop(pool, {
      schema,
      tenantId,
      concurrency: ctx.concurrency,
      seconds,
      keyPrefix: `${name}-${ctx.runId}`,
    });
    return referencePhase(name, r, await meter());
  } finally {
    await pool.end();
  }
}

function referencePhase(name: string, r: Awaited<ReturnType<typeof runThreeInsertLoop>>, cpu: CpuShares): Phase {
  return {
    name,
    ok: r.ok,
    bad: r.bad,
    badDetail: r.lastError,
    seconds: r.seconds,
    rate: r.ok / r.seconds,
    p50: r.p50,
    p99: r.p99,
    cpu,
  };
}

/**
 * The three API processes keep their pools open between their phases (30 s idle timeout), so a reference
 * phase's `concurrency` connections come on top of them. Refuses to run when they would not fit: the
 * server's answer would be "too many clients", which the API phases see as 503s and the meters as CPU
 * of connections forked only to be refused.
 */
async function requireConnectionRoom(pool: Pool, concurrency: number): Promise<void> {
  const { rows } = await pool.query<{ open: number; max: number; reserved: number }>(
    `SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS open,
            current_setting('max_connections')::int AS max,
            current_setting('superuser_reserved_connections')::int AS reserved`,
  );
  const { open, max, reserved } = rows[0];
  const need = open + concurrency + 4; // + the references' pool, and a few for the meters and a relay's reconnects
  if (need > max - reserved) {
    throw new Error(
      `bench:create needs about ${need} connections (${open} open now: three API processes' pools, their relays and ` +
        `listeners; plus the references' ${concurrency}); the server allows ${max - reserved} ` +
        `(max_connections ${max} - superuser_reserved_connections ${reserved}). Raise it ` +
        `(ALTER SYSTEM SET max_connections = ${Math.ceil((need + reserved + 20) / 50) * 50}; then restart PostgreSQL) ` +
        `or lower BENCH_CONCURRENCY.`,
    );
  }
}

// ---------- API phases through autocannon ----------

const header = (h: Record<string, string | string[]>, name: string): string | undefined => {
  for (const k of Object.keys(h)) if (k.toLowerCase() === name) return String(h[k]);
  return undefined;
};

let createSeq = 0;

/** create: a new key per request (returns the keys that got a fresh 201); replay: cycles through `replayKeys`. */
async function runHttp(
  ctx: Ctx,
  kind: 'create' | 'replay',
  seconds: number,
  name: string,
  replayKeys: string[] = [],
  target: Target = { baseUrl: ctx.baseUrl, pid: ctx.apiPid },
): Promise<Phase & { created: string[] }> {
  const created: string[] = [];
  const lat: number[] = [];
  const badCodes = new Map<string, number>();
  let ok = 0;
  let bad = 0;
  let next = 0;
  if (kind === 'replay' && replayKeys.length === 0) throw new Error('no keys to replay (the create phase got no 201)');
  const meter = await cpuMeter(target.pool ?? ctx.pool, target.pid);
  const broker0 = target.brokerPid ? cpuSecondsOf(target.brokerPid) : 0;
  const t0 = performance.now();
  const res = await new Promise<AcResult>((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${target.baseUrl}/v1/tickets`,
        connections: ctx.concurrency,
        duration: seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${target.apiKey ?? ctx.apiKey}`, 'content-type': 'application/json' },
        body: BODY_TEXT,
        timeout: 30,
        requests: [
          {
            setupRequest: (req, context) => {
              const key = kind === 'create' ? `c-${ctx.runId}-${++createSeq}` : replayKeys[next++ % replayKeys.length];
              context.key = key;
              return { ...req, headers: { ...req.headers, 'idempotency-key': key } };
            },
            onResponse: (status, _body, context, headers) => {
              const replayed = header(headers, 'idempotent-replayed') === 'true';
              const good = status === 201 && (kind === 'replay' ? replayed : !replayed);
              if (good) {
                ok++;
                if (kind === 'create') created.push(String(context.key));
              } else {
                bad++;
                const code = `${status}${replayed ? ' replayed' : ''}`;
                badCodes.set(code, (badCodes.get(code) ?? 0) + 1);
              }
            },
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    inst.on('response', (_c, _status, _bytes, ms) => lat.push(ms));
  });
  const secs = (performance.now() - t0) / 1000;
  const cpu = await meter();
  const broker = target.brokerPid ? ((cpuSecondsOf(target.brokerPid) - broker0) / secs) * 100 : undefined;
  if (res.errors || res.timeouts) badCodes.set('socket errors/timeouts', res.errors + res.timeouts);
  const badDetail = [...badCodes].map(([k, v]) => `${k}: ${v}`).join(', ');
  await new Promise((r) => setTimeout(r, 300)); // let in-flight requests finish before the next phase
  return {
    name,
    ok,
    bad,
    badDetail,
    seconds: secs,
    rate: ok / secs,
    p50: percentile(lat, 0.5),
    p99: percentile(lat, 0.99),
    cpu: broker === undefined ? cpu : { ...cpu, other: Math.max(0, cpu.other - broker) },
    broker,
    created,
  };
}

// ---------- setup ----------

const isBenchDb = (url: string) => /(^|_)bench$/.test(decodeURIComponent(new URL(url).pathname.slice(1)));

/**
 * BENCH_DATABASE_URL; else DATABASE_URL if it names a *_bench database; else DATABASE_URL's server with the
 * database tickets_bench; else the default. The bench truncates tables, so it never runs on another database.
 */
function benchDatabaseUrl(): string {
  let url = env.BENCH_DATABASE_URL || undefined;
  if (!url && env.DATABASE_URL) {
    url = env.DATABASE_URL;
    if (!isBenchDb(url)) {
      const u = new URL(url);
      u.pathname = '/tickets_bench';
      url = u.toString();
    }
  }
  url ??= DEFAULT_URL;
  if (!isBenchDb(url)) {
    throw new Error(
      `refusing to run against ${new URL(url).pathname.slice(1)}: the bench truncates its ticket tables, so the database name must end in "bench"`,
    );
  }
  return url;
}

/** CPU time the request path used per successful request: API child + this process + the bench DB's Postgres. */
const cpuMsPerReq = (p: Phase) => ((p.cpu.api + p.cpu.bench + p.cpu.pg + (p.broker ?? 0)) * 10) / p.rate;

const phaseLine = (p: Phase) =>
  `${int(p.rate).padStart(6)} req/s  p50 ${fixed(p.p50).padStart(6)} ms  p99 ${fixed(p.p99).padStart(6)} ms  ` +
  `cpu% api ${int(p.cpu.api)} bench ${int(p.cpu.bench)} pg ${int(p.cpu.pg)} other ${int(p.cpu.other)}` +
  (p.bad ? `  UNEXPECTED ${p.bad} (${p.badDetail})` : '');

export async function runCreateBench(): Promise<string> {
  const concurrency = num('BENCH_CONCURRENCY', 32);
  const seconds = num('BENCH_SECONDS', 6);
  const rounds = num('BENCH_ROUNDS', 3);
  const warmup = num('BENCH_WARMUP_SECONDS', 2);
  const poolSize = num('BENCH_POOL', concurrency);
  const cpuProfDir = env.BENCH_CPU_PROF;
  // The API child's IDEMPOTENCY_REPLAY_CACHE_SIZE (it inherits this environment).
  const cacheConfig = loadConfig({
    IDEMPOTENCY_REPLAY_CACHE_SIZE: env.IDEMPOTENCY_REPLAY_CACHE_SIZE,
    IDEMPOTENCY_REPLAY_CACHE_MB: env.IDEMPOTENCY_REPLAY_CACHE_MB,
  }).idempotency;
  // Entries the cache holds: its count bound, or its bound on body characters over a created ticket's
  // JSON (the request's fields plus id, status and timestamps: BODY_TEXT + ~200 characters).
  const cacheSize = Math.min(
    cacheConfig.replayCacheSize,
    Math.floor(cacheConfig.replayCacheChars / (BODY_TEXT.length + 200)),
  );
  // The API runs as `npm run start:api` runs it (heap capped: see docs/benchmarks.md).
  const apiNodeArgs =
    env.BENCH_API_NODE_ARGS !== undefined ? env.BENCH_API_NODE_ARGS.split(/\s+/).filter(Boolean) : API_NODE_ARGS;
  const url = benchDatabaseUrl();
  const root = repoRoot();
  const distRoot = join(__dirname, '..');
  const started = Date.now();
  const log = (line: string) => console.log(`[${fixed((Date.now() - started) / 1000).padStart(5)}s] ${line}`);
  const runId = randomBytes(4).toString('hex');

  log(`migrating ${new URL(url).pathname.slice(1)}`);
  execFileSync(process.execPath, [join(root, 'scripts', 'db-migrate.mjs'), 'deploy'], {
    env: { ...env, DATABASE_URL: url },
    stdio: 'inherit',
  });

  const pool = new Pool({ connectionString: url, max: 2, application_name: 'bench-meter' });
  let api: ApiChild | undefined;
  let api2: ApiChild | undefined;
  let api3: ApiChild | undefined;
  const relayDb = scratchDatabase(url, 'relay');
  const relayPool = new Pool({ connectionString: relayDb.url, max: 2, application_name: 'bench-meter' });
  const topic = `bench-create-${runId}`;
  const brokers = (env.KAFKA_BROKERS || configDefaults().kafka.brokers.join(',')).split(',');
  try {
    const info = await pool.query(
      `SELECT version() AS v, current_setting('synchronous_commit') AS sc, current_setting('max_connections') AS mc,
              (SELECT string_agg(tgname, ', ' ORDER BY tgname) FROM pg_trigger
                WHERE tgrelid = 'public.outbox_events'::regclass AND NOT tgisinternal) AS outbox_triggers`,
    );
    await pool.query(
      'TRUNCATE tickets, idempotency_keys, outbox_events, outbox_pending, outbox_publications, outbox_dead_letters, api_keys, tenants',
    );
    for (const sql of plainTablesDdl(PLAIN_SCHEMA)) await pool.query(sql);
    await checkpoint(pool, log, 'phases');
    log(`truncated the bench tables, created the plain tables in schema ${PLAIN_SCHEMA}`);

    const prisma = createPrismaClient(url, 1, 'bench-setup');
    const tenant = await createApiKey(prisma, `bench-${runId}`);
    const refTenant = await createApiKey(prisma, `bench-ref-${runId}`);
    await prisma.$disconnect();
    log(`migrating ${relayDb.name} (the relay-running API's database)`);
    await relayDb.create();
    const relayPrisma = createPrismaClient(relayDb.url, 1, 'bench-setup');
    const relayTenant = await createApiKey(relayPrisma, `bench-relay-${runId}`);
    await relayPrisma.$disconnect();

    const nodeArgs = [...requireHooks(), ...apiNodeArgs];
    if (cpuProfDir)
      nodeArgs.push(
        '--cpu-prof',
        `--cpu-prof-dir=${cpuProfDir}`,
        '-r',
        join(__dirname, 'support', 'exit-on-sigterm.js'),
      );
    const apiEnv = { DATABASE_URL: url, LOG_LEVEL: 'warn', RELAY_ENABLED: 'false', DB_POOL_MAX: String(poolSize) };
    api = await startApi({ mainJs: apiMainJs(distRoot), nodeArgs, env: apiEnv });
    log(`API child pid ${api.pid} on ${api.baseUrl} (DB_POOL_MAX=${poolSize}), RSS ${mb(memoryOf(api.pid).rss)} MB`);
    // A small pool: a replay is one statement, and three pools of `concurrency` would crowd max_connections.
    const pool2 = Math.min(poolSize, DB_REPLAY_POOL);
    api2 = await startApi({
      mainJs: apiMainJs(distRoot),
      nodeArgs,
      env: { ...apiEnv, IDEMPOTENCY_REPLAY_CACHE_SIZE: '0', DB_POOL_MAX: String(pool2) },
    });
    log(`second API child (replay cache off) pid ${api2.pid} on ${api2.baseUrl} (DB_POOL_MAX=${pool2})`);
    // (r): the API as it ships, its relay publishing every create.
    api3 = await startApi({
      mainJs: apiMainJs(distRoot),
      nodeArgs,
      env: {
        ...apiEnv,
        DATABASE_URL: relayDb.url,
        RELAY_ENABLED: 'true',
        TICKET_EVENTS_TOPIC: topic,
        KAFKA_BROKERS: brokers.join(','),
      },
    });
    const broker = brokerPid(root);
    log(
      `third API child (relay running) pid ${api3.pid} on ${api3.baseUrl}, database ${relayDb.name}, topic ${topic}; ` +
        `broker JVM ${broker ? `pid ${broker}` : 'not found (BENCH_BROKER_PID): its CPU is not counted'}`,
    );
    const rss = rssSampler(api.pid);

    const ctx: Ctx = {
      baseUrl: api.baseUrl,
      apiKey: tenant.apiKey,
      apiPid: api.pid,
      dbReplay: { baseUrl: api2.baseUrl, pid: api2.pid },
      relay: { baseUrl: api3.baseUrl, pid: api3.pid, apiKey: relayTenant.apiKey, pool: relayPool, brokerPid: broker },
      pool,
      url,
      concurrency,
      runId,
      log,
    };
    let createdTotal = 0;
    const plain = (secs: number, name: string) => runReference(ctx, PLAIN_SCHEMA, refTenant.tenantId, secs, name);
    const schema = (secs: number, name: string) => runReference(ctx, 'public', refTenant.tenantId, secs, name);

    log(`warm-up: API create ${warmup}s`);
    const w1 = await runHttp(ctx, 'create', warmup, 'warm-up create');
    createdTotal += w1.ok;
    log(`warm-up: API create   ${phaseLine(w1)}`);
    // Opens the second process's pool too, so its backends are counted from the first measured (c'').
    log(
      `warm-up: (c'') db replay ${phaseLine(await runHttp(ctx, 'replay', warmup, 'warm-up replay (db)', w1.created, ctx.dbReplay))}`,
    );
    log(
      `warm-up: (r) relay    ${phaseLine(await runHttp(ctx, 'create', warmup, 'warm-up create (relay)', [], ctx.relay))}`,
    );
    await requireConnectionRoom(pool, concurrency);
    log(`warm-up: (a) plain, (b) schema ${warmup}s each`);
    log(`warm-up: (a) plain    ${phaseLine(await plain(warmup, 'warm-up plain'))}`);
    log(`warm-up: (b) schema   ${phaseLine(await schema(warmup, 'warm-up schema'))}`);

    const perRound: Array<{
      plain: Phase;
      schema: Phase;
      relay: Phase;
      create: Phase;
      replay: Phase;
      dbReplay: Phase;
    }> = [];
    for (let r = 1; r <= rounds; r++) {
      const a = await plain(seconds, 'plain');
      log(`round ${r}/${rounds}: (a) plain    ${phaseLine(a)}`);
      const b = await schema(seconds, 'schema');
      log(`round ${r}/${rounds}: (b) schema   ${phaseLine(b)}`);
      const relay = await runHttp(ctx, 'create', seconds, 'create (relay)', [], ctx.relay);
      log(`round ${r}/${rounds}: (r) relay    ${phaseLine(relay)}`);
      const create = await runHttp(ctx, 'create', seconds, 'create');
      createdTotal += create.ok;
      log(`round ${r}/${rounds}: (c) create   ${phaseLine(create)}`);
      // The API's cache keeps the newest ~`cacheSize` answers and evicts the oldest: cycling through more keys
      // than it holds would miss on every request (each miss evicts the key needed next) and measure (c'').
      const cachedKeys = create.created.slice(-Math.max(1, Math.floor(cacheSize / 2)));
      const replay = await runHttp(ctx, 'replay', seconds, 'replay', cachedKeys);
      log(
        `round ${r}/${rounds}: (c') replay  ${phaseLine(replay)} (${cachedKeys.length} of the round's ${create.created.length} keys)`,
      );
      const dbReplay = await runHttp(ctx, 'replay', seconds, 'replay (db)', create.created, ctx.dbReplay);
      log(`round ${r}/${rounds}: (c'') db replay ${phaseLine(dbReplay)}`);
      perRound.push({ plain: a, schema: b, relay, create, replay, dbReplay });
    }

    rss.stop();
    const mem = memoryOf(api.pid);
    const peakRss = Math.max(mem.hwm, rss.peak());
    const { rows: cnt } = await pool.query(
      `SELECT (SELECT count(*) FROM tickets WHERE tenant_id = $1)::int AS tickets,
              (SELECT count(*) FROM idempotency_keys WHERE tenant_id = $1)::int AS keys,
              (SELECT count(*) FROM outbox_events WHERE tenant_id = $1)::int AS events`,
      [tenant.tenantId],
    );
    await Promise.all([api.stop(), api2.stop(), api3.stop()]);
    api = api2 = api3 = undefined;

    // ---------- report ----------
    const col = <K extends keyof (typeof perRound)[number]>(k: K) => perRound.map((x) => x[k]);
    const summary = (ps: Phase[]) => ({
      rate: median(ps.map((p) => p.rate)),
      min: Math.min(...ps.map((p) => p.rate)),
      max: Math.max(...ps.map((p) => p.rate)),
      spread: spreadPct(ps.map((p) => p.rate)),
      p50: median(ps.map((p) => p.p50)),
      p99: median(ps.map((p) => p.p99)),
    });
    const ratio = (f: (x: (typeof perRound)[number]) => number) => median(perRound.map(f));
    const schemaToPlain = ratio((x) => x.schema.rate / x.plain.rate);
    const createToPlain = ratio((x) => x.create.rate / x.plain.rate);
    const relayToPlain = ratio((x) => x.relay.rate / x.plain.rate);
    const relayToCreate = ratio((x) => x.relay.rate / x.create.rate);
    const createToSchema = ratio((x) => x.create.rate / x.schema.rate);
    const replayRatio = ratio((x) => x.replay.rate / x.create.rate);
    const dbReplayRatio = ratio((x) => x.dbReplay.rate / x.create.rate);
    const rateCell = (s: ReturnType<typeof summary>) =>
      `${int(s.rate)} (${int(s.min)}–${int(s.max)}, spread ${fixed(s.spread, 0)}%)`;
    const row = (what: string, ps: Phase[], ratios: string) => {
      const s = summary(ps);
      return `| ${what} | ${rateCell(s)} | ${fixed(s.p50)} | ${fixed(s.p99)} | ${ratios} |`;
    };
    const bar = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    const peakMb = mb(peakRss);
    const integrityOk =
      cnt[0].tickets === cnt[0].keys && cnt[0].keys === cnt[0].events && cnt[0].tickets >= createdTotal;
    const unexpected = perRound.reduce(
      (n, x) => n + x.plain.bad + x.schema.bad + x.relay.bad + x.create.bad + x.replay.bad + x.dbReplay.bad,
      0,
    );
    const cpuInfo = cpus();
    const replayCache =
      env.IDEMPOTENCY_REPLAY_CACHE_SIZE === '0'
        ? 'through the database (IDEMPOTENCY_REPLAY_CACHE_SIZE=0)'
        : "from the API's in-process cache";
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim();
    } catch {
      /* not a checkout */
    }

    const lines: string[] = [];
    lines.push(`## bench:create — ${new Date(started).toISOString()}`, '');
    lines.push(
      `Node ${process.version}, ${cpuInfo.length} CPUs (${cpuInfo[0]?.model.trim() ?? '?'}), load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ` +
        `${String(info.rows[0].v).split(' on ')[0]}, synchronous_commit=${info.rows[0].sc}, max_connections=${info.rows[0].mc}, ` +
        `outbox_events triggers: ${outboxTriggers(info.rows[0].outbox_triggers)}; ` +
        `concurrency ${concurrency}, pool size ${poolSize} (API DB_POOL_MAX) and ${concurrency} (references' pg.Pool); ${rounds} rounds of ${seconds} s per phase, ` +
        `${apiNodeArgs.length ? `API node options ${apiNodeArgs.join(' ')}, ` : ''}` +
        `MALLOC_ARENA_MAX=${env.MALLOC_ARENA_MAX ?? '(unset)'}, ` +
        `API replay cache ${cacheConfig.replayCacheSize} entries and ${fixed(cacheConfig.replayCacheChars / 1024 / 1024)} MB of bodies (~${cacheSize} of these tickets), ` +
        `warm-up ${warmup} s; commit ${commit}.`,
      '',
    );
    lines.push(
      `| what | req/s (median of ${rounds}) | p50 ms | p99 ms | ratios (median of per-round ratios) |`,
      '|---|---|---|---|---|',
    );
    lines.push(
      row(
        '(a) plain: raw pg, BEGIN + 3 INSERT + COMMIT, plain tables (primary keys only, no trigger)',
        col('plain'),
        '1.00',
      ),
    );
    lines.push(
      row("(b) schema: the same transaction on the project's tables", col('schema'), `b/a ${fixed(schemaToPlain, 2)}`),
    );
    lines.push(
      row(
        '(r) API create with its relay running (as it ships): POST /v1/tickets, new key, every create published to Kafka',
        col('relay'),
        `**r/a ${fixed(relayToPlain, 2)}**, **r/c ${fixed(relayToCreate, 2)}**`,
      ),
    );
    lines.push(
      row(
        '(c) API create, RELAY_ENABLED=false: POST /v1/tickets, new key',
        col('create'),
        `**c/a ${fixed(createToPlain, 2)}**, c/b ${fixed(createToSchema, 2)}`,
      ),
    );
    lines.push(
      row(
        `(c') API replay: same key again (201, Idempotent-Replayed), ${replayCache}`,
        col('replay'),
        `c'/c ${fixed(replayRatio, 2)}`,
      ),
    );
    lines.push(
      row(
        "(c'') API replay through the database: the same keys to a second API process (replay cache off)",
        col('dbReplay'),
        `c''/c ${fixed(dbReplayRatio, 2)}`,
      ),
    );
    lines.push('');
    lines.push(
      "Each round runs (a), (b), (r), (c), (c') and (c'') back to back; a ratio is taken within a round, then the median over the rounds.",
      '',
    );
    const perReq = (ps: Phase[], k: keyof CpuShares) => median(ps.map((p) => (p.cpu[k] * 10) / p.rate));
    const cpuMs = (ps: Phase[]) => median(ps.map(cpuMsPerReq));
    lines.push(
      'CPU ms per request (median of the rounds; "bench" is the references\' in-process `pg` client, or autocannon for the API phases; "pg" is the bench database\'s Postgres processes; "broker" the broker\'s JVM, counted for (r) only: its relay is the only publisher):',
      '',
    );
    lines.push(
      '| what | API | bench | pg | broker | total | other processes (% of one core) |',
      '|---|---|---|---|---|---|---|',
    );
    const brokerPerReq = (ps: Phase[]) =>
      ps[0]?.broker === undefined ? '' : fixed(median(ps.map((p) => ((p.broker ?? 0) * 10) / p.rate)), 2);
    for (const [what, ps] of [
      ['(a) plain', col('plain')],
      ['(b) schema', col('schema')],
      ['(r) create, relay running', col('relay')],
      ['(c) create, relay off', col('create')],
      ["(c') replay", col('replay')],
      ["(c'') replay (db)", col('dbReplay')],
    ] as const) {
      lines.push(
        `| ${what} | ${fixed(perReq(ps, 'api'), 2)} | ${fixed(perReq(ps, 'bench'), 2)} | ${fixed(perReq(ps, 'pg'), 2)} | ${brokerPerReq(ps)} | ${fixed(cpuMs(ps), 2)} | ${int(median(ps.map((p) => p.cpu.other)))}% |`,
      );
    }
    const others = median(
      perRound.flatMap((x) => [
        x.plain.cpu.other,
        x.schema.cpu.other,
        x.relay.cpu.other,
        x.create.cpu.other,
        x.replay.cpu.other,
        x.dbReplay.cpu.other,
      ]),
    );
    lines.push('');
    lines.push(
      `If CPU were the only limit and the box did nothing else: (a) ~${int((cpuInfo.length * 1000) / cpuMs(col('plain')))}/s, ` +
        `(b) ~${int((cpuInfo.length * 1000) / cpuMs(col('schema')))}/s, (r) ~${int((cpuInfo.length * 1000) / cpuMs(col('relay')))}/s, (c) ~${int((cpuInfo.length * 1000) / cpuMs(col('create')))}/s. ` +
        `Other processes used a median ${int(others)}% of one core during the phases${others > 25 ? ' (a busy box: treat the req/s as a lower bound, read the ratios and CPU ms)' : ''}.`,
      '',
    );
    lines.push('| bar (issues #13, #18) | measured | result |', '|---|---|---|');
    lines.push(
      `| create with the relay running >= 0.6x (a) | ${fixed(relayToPlain, 2)}x | ${bar(relayToPlain >= 0.6)} |`,
    );
    lines.push(
      `| create with the relay running >= 0.85x the relay off | ${fixed(relayToCreate, 2)}x | ${bar(relayToCreate >= 0.85)} |`,
    );
    lines.push(`| create, relay off >= 0.6x (a) | ${fixed(createToPlain, 2)}x | ${bar(createToPlain >= 0.6)} |`);
    lines.push(`| replay >= 3x create (${replayCache}) | ${fixed(replayRatio, 2)}x | ${bar(replayRatio >= 3)} |`);
    // The bar accepted for replays through the database (docs/benchmarks.md, "Replays through the database: a fair bar").
    const dbReplayApi = perReq(col('dbReplay'), 'api');
    const createApi = perReq(col('create'), 'api');
    lines.push(
      `| replay through the database >= 1.2x create (second process) | ${fixed(dbReplayRatio, 2)}x | ${bar(dbReplayRatio >= 1.2)} |`,
      `| replay through the database: API CPU <= a create's | ${fixed(dbReplayApi, 2)} / ${fixed(createApi, 2)} ms | ${bar(dbReplayApi <= createApi)} |`,
    );
    lines.push(`| API peak RSS < 200 MB | ${peakMb} MB (VmHWM) | ${bar(peakMb < 200)} |`);
    lines.push('');
    lines.push(
      `Per round (cpu: % of ONE core during the phase, the box has ${cpuInfo.length}; "other" is every other process on the box, e.g. concurrent jobs):`,
      '',
    );
    lines.push(
      '| round | phase | req/s | p50 ms | p99 ms | cpu api | cpu bench | cpu postgres | cpu broker | cpu other | CPU ms/req (api+bench+pg+broker) | unexpected |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    perRound.forEach((x, i) => {
      for (const p of [x.plain, x.schema, x.relay, x.create, x.replay, x.dbReplay]) {
        lines.push(
          `| ${i + 1} | ${p.name} | ${int(p.rate)} | ${fixed(p.p50)} | ${fixed(p.p99)} | ${int(p.cpu.api)}% | ${int(p.cpu.bench)}% | ${int(p.cpu.pg)}% | ${p.broker === undefined ? '' : `${int(p.broker)}%`} | ${int(p.cpu.other)}% | ${fixed(cpuMsPerReq(p), 2)} | ${p.bad ? `${p.bad} (${p.badDetail})` : 0} |`,
        );
      }
    });
    lines.push('');
    lines.push(
      `Integrity: API tenant has ${cnt[0].tickets} tickets, ${cnt[0].keys} idempotency keys, ${cnt[0].events} outbox events; ` +
        `${createdTotal} creates answered 201 (in-flight requests cut off at a phase's end may add a few rows): ${integrityOk ? 'OK' : 'MISMATCH'}. ` +
        `Unexpected responses/errors in measured phases: ${unexpected}.`,
    );
    const report = lines.join('\n') + '\n';

    const dir = join(root, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const stamp = new Date(started).toISOString().replace(/:/g, '').replace(/\..*$/, '');
    const file = join(dir, `create-${stamp}.md`);
    writeFileSync(file, report);
    console.log(`\n${report}`);
    log(`written to ${file}`);
    if (cpuProfDir) log(`CPU profile of the API in ${cpuProfDir}`);
    return report;
  } finally {
    for (const child of [api, api2, api3]) {
      if (!child) continue;
      process.stderr.write(`API ${child.pid} stderr (tail):\n${child.stderrTail()}\n`);
      await child.stop();
    }
    await pool.end();
    await relayPool.end();
    await relayDb.drop().catch(() => undefined);
    const admin = new Kafka({ clientId: 'bench-create', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin
      .connect()
      .then(() => admin.deleteTopics({ topics: [topic] }))
      .catch(() => undefined)
      .finally(() => admin.disconnect());
  }
}

if (require.main === module) {
  runCreateBench().then(
    () => process.exit(0),
    (e) => {
      console.error(`bench:create failed: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}

/** The outbox's triggers as the header states them: the migrated schema has the queue's alone (20261203000000_outbox_pending_queue). */
function outboxTriggers(names: string | null): string {
  if (names === 'outbox_events_enqueue') return "outbox_events_enqueue (the queue's, as migrated)";
  return `${names ?? 'none'} (NOT the migrated schema, whose only one is outbox_events_enqueue)`;
}
