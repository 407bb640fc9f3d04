// POST /v1/tickets throughput against a raw `pg` baseline measured in the same run (issue #2).
//
//   npm run bench:create          (build, then node -r ./scripts/register-aliases.js dist/bench/create.bench.js)
//
// Env: BENCH_DATABASE_URL (default: DATABASE_URL if its database is *_bench, else DATABASE_URL's server with
// database tickets_bench, else postgresql://postgres@127.0.0.1:5432/tickets_bench; the name must end in
// "bench": the bench creates and migrates it and TRUNCATES its ticket tables at the start), BENCH_CONCURRENCY
// (32), BENCH_SECONDS per measured phase (6), BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (2), BENCH_POOL (the
// API's DB_POOL_MAX; default = concurrency; the baseline's pool is always = concurrency), BENCH_CPU_PROF=<dir>
// (write a V8 CPU profile of the API child there), BENCH_API_NODE_ARGS (extra node options for the API
// child, e.g. "--max-old-space-size=128").
//
// Phases: warm-up (API creates, then baseline), then BENCH_ROUNDS rounds of baseline -> API create ->
// API replay, interleaved so drift on a shared box hits all three alike. Reported: median req/s of the
// rounds with their spread, median p50/p99, the per-round ratios (median), and the API child's peak RSS.
//   baseline  in-process loop, `concurrency` workers on a pg.Pool of the same size: BEGIN; INSERT tickets;
//             INSERT idempotency_keys; INSERT outbox_events; COMMIT (same columns and payload sizes as the API).
//   create    autocannon, `concurrency` connections, POST /v1/tickets, a new Idempotency-Key per request;
//             counts 201s without Idempotent-Replayed.
//   replay    the same, cycling through the keys the round's create phase got a 201 for (same body);
//             counts 201s with Idempotent-Replayed: true.
// Bars (issue #2): create >= 0.6x baseline, replay >= 1.5x create, API peak RSS < 300 MB. The exit code
// is 0 whatever the bars say (1 only when the bench itself cannot run).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { apiMainJs, cpuSecondsOf, machineJiffies, memoryOf, rssSampler, startApi, type ApiChild } from './support/api-process';
import { fixed, int, mb, median, percentile, spreadPct } from './support/stats';
import { HEAP_CAP, repoRoot, requireHooks, positiveNumberEnv } from './support/paths';

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
    onResponse: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void;
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
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: AcOptions, cb: (err: Error | null, res: AcResult) => void) => AcInstance;

const DEFAULT_URL = 'postgresql://postgres@127.0.0.1:5432/tickets_bench';
const env = process.env;
const num = positiveNumberEnv;

/** The create request: ~1 KB of JSON, no externalRef (so every new key makes a new ticket). */
const BODY = {
  title: 'Bench: the printer on floor 3 jams on every duplex job',
  description:
    'Since Monday the shared printer on floor 3 (HP LaserJet, asset 00417) jams whenever a job is printed double-sided. ' +
    'Single-sided jobs go through. The paper tray was refilled with the usual 80 g/m2 stock and the rollers were wiped; ' +
    'the jam happens at the duplex unit, the display shows error 13.B2.D1. Several people on the floor depend on it for ' +
    'contract printouts, so please send someone or tell us which other printer to use in the meantime. ' +
    'Steps to reproduce: print any two-page PDF with "print on both sides" selected. Expected: one sheet printed on both ' +
    'sides. Actual: the sheet stops halfway out of the duplex unit and has to be pulled out by hand.',
  priority: 'high',
  requester: { name: 'Bench Agent', email: 'agent@bench.example' },
  metadata: { source: 'bench', channel: 'agent', tags: ['printer', 'floor-3', 'duplex'], site: 'HQ', attempt: 1 },
};
const BODY_TEXT = JSON.stringify(BODY);

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
  cpu: { api: number; bench: number; pg: number; other: number };
}

interface Ctx {
  baseUrl: string;
  apiKey: string;
  apiPid: number;
  /** The baseline's pool (also used to find the bench database's backends). */
  pool: Pool;
  concurrency: number;
  runId: string;
  log: (line: string) => void;
}

// ---------- CPU accounting per phase ----------

/** The bench database's backends plus Postgres's shared background processes (WAL writer, checkpointer, ...). */
async function postgresPids(pool: Pool): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL');
  return rows.map((r) => r.pid);
}

function cpuSecondsOfAll(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, cpuSecondsOf(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** CPU used by the API child, this process, the bench database's Postgres processes, and everything else. */
async function cpuMeter(apiPid: number, pool: Pool) {
  const pids = await postgresPids(pool);
  const t0 = performance.now();
  const api0 = cpuSecondsOf(apiPid);
  const b0 = process.cpuUsage();
  const pg0 = cpuSecondsOfAll(pids);
  const m0 = machineJiffies();
  return () => {
    const s = (performance.now() - t0) / 1000;
    const b = process.cpuUsage(b0);
    const m = machineJiffies();
    let pgSecs = 0;
    for (const [pid, secs] of cpuSecondsOfAll(pids)) pgSecs += secs - (pg0.get(pid) ?? secs);
    const api = ((cpuSecondsOf(apiPid) - api0) / s) * 100;
    const bench = ((b.user + b.system) / 1e6 / s) * 100;
    const pg = (pgSecs / s) * 100;
    const box = ((m.busy - m0.busy) / Math.max(1, m.total - m0.total)) * 100 * cpus().length;
    return { api, bench, pg, other: Math.max(0, box - api - bench - pg) };
  };
}

// ---------- baseline: raw pg, BEGIN + 3 INSERT + COMMIT ----------

const SQL_TICKET = `INSERT INTO tickets (id, tenant_id, title, description, priority, status, external_ref, requester, metadata,
  idempotency_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`;
const SQL_KEY = `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
  outcome, ticket_id, created_at, replay_until, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`;
const SQL_EVENT = `INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;
const FINGERPRINT = createHash('sha256').update('ticket.create\n').update(BODY_TEXT).digest('hex');

/** The three rows the API writes for one create, built the same way (ticket JSON as response and in the event). */
function baselineRows(tenantId: string, key: string) {
  const now = new Date();
  const id = randomUUID();
  const ticket = {
    id,
    title: BODY.title,
    description: BODY.description,
    priority: BODY.priority,
    status: 'open',
    externalRef: null,
    requester: BODY.requester,
    metadata: BODY.metadata,
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
  };
  const response = JSON.stringify(ticket);
  const correlationId = randomUUID();
  const eventId = randomUUID();
  const event = {
    id: eventId,
    type: 'ticket.created.v1',
    occurredAt: now.toISOString(),
    tenantId,
    ticketId: id,
    idempotencyKey: key,
    correlationId,
    data: ticket,
  };
  const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
  return {
    ticket: [id, tenantId, BODY.title, BODY.description, BODY.priority, 'open', null, JSON.stringify(BODY.requester), JSON.stringify(BODY.metadata), key, now, now],
    key: [tenantId, key, 'ticket.create', FINGERPRINT, BODY_TEXT, 201, response, 'created', id, now, new Date(now.getTime() + 86_400_000), new Date(now.getTime() + 7 * 86_400_000)],
    event: [eventId, tenantId, 'ticket', id, 'ticket.created.v1', JSON.stringify(event), JSON.stringify({ traceparent, 'correlation-id': correlationId }), now],
  };
}

let baselineSeq = 0;

async function runBaseline(ctx: Ctx, pool: Pool, tenantId: string, seconds: number, name: string): Promise<Phase> {
  const lat: number[] = [];
  let ok = 0;
  let bad = 0;
  let lastError = '';
  const meter = await cpuMeter(ctx.apiPid, ctx.pool);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: ctx.concurrency }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        const rows = baselineRows(tenantId, `base-${ctx.runId}-${++baselineSeq}`);
        const c = await pool.connect();
        try {
          await c.query('BEGIN');
          await c.query(SQL_TICKET, rows.ticket);
          await c.query(SQL_KEY, rows.key);
          await c.query(SQL_EVENT, rows.event);
          await c.query('COMMIT');
          ok++;
          lat.push(performance.now() - s);
        } catch (e) {
          bad++;
          lastError = (e as Error).message;
          await c.query('ROLLBACK').catch(() => undefined);
        } finally {
          c.release();
        }
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { name, ok, bad, badDetail: lastError, seconds: secs, rate: ok / secs, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), cpu: meter() };
}

// ---------- API phases through autocannon ----------

const header = (h: Record<string, string | string[]>, name: string): string | undefined => {
  for (const k of Object.keys(h)) if (k.toLowerCase() === name) return String(h[k]);
  return undefined;
};

let createSeq = 0;

/** create: a new key per request (returns the keys that got a fresh 201); replay: cycles through `replayKeys`. */
async function runHttp(ctx: Ctx, kind: 'create' | 'replay', seconds: number, name: string, replayKeys: string[] = []): Promise<Phase & { created: string[] }> {
  const created: string[] = [];
  const lat: number[] = [];
  const badCodes = new Map<string, number>();
  let ok = 0;
  let bad = 0;
  let next = 0;
  if (kind === 'replay' && replayKeys.length === 0) throw new Error('no keys to replay (the create phase got no 201)');
  const meter = await cpuMeter(ctx.apiPid, ctx.pool);
  const t0 = performance.now();
  const res = await new Promise<AcResult>((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${ctx.baseUrl}/v1/tickets`,
        connections: ctx.concurrency,
        duration: seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
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
  const cpu = meter();
  if (res.errors || res.timeouts) badCodes.set('socket errors/timeouts', res.errors + res.timeouts);
  const badDetail = [...badCodes].map(([k, v]) => `${k}: ${v}`).join(', ');
  await new Promise((r) => setTimeout(r, 300)); // let in-flight requests finish before the next phase
  return { name, ok, bad, badDetail, seconds: secs, rate: ok / secs, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), cpu, created };
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
    throw new Error(`refusing to run against ${new URL(url).pathname.slice(1)}: the bench truncates its ticket tables, so the database name must end in "bench"`);
  }
  return url;
}


/** CPU time the request path used per successful request: API child + this process + the bench DB's Postgres. */
const cpuMsPerReq = (p: Phase) => ((p.cpu.api + p.cpu.bench + p.cpu.pg) * 10) / p.rate;

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
  // The API runs as `npm run start:api` runs it (heap capped: see docs/benchmarks.md).
  const apiNodeArgs = (env.BENCH_API_NODE_ARGS ?? HEAP_CAP).split(/\s+/).filter(Boolean);
  const url = benchDatabaseUrl();
  const root = repoRoot();
  const distRoot = join(__dirname, '..');
  const started = Date.now();
  const log = (line: string) => console.log(`[${fixed((Date.now() - started) / 1000).padStart(5)}s] ${line}`);
  const runId = randomBytes(4).toString('hex');

  log(`migrating ${new URL(url).pathname.slice(1)}`);
  execFileSync(process.execPath, [join(root, 'scripts', 'db-migrate.mjs'), 'deploy'], { env: { ...env, DATABASE_URL: url }, stdio: 'inherit' });

  const pool = new Pool({ connectionString: url, max: concurrency, application_name: 'bench-baseline', idleTimeoutMillis: 0 });
  let api: ApiChild | undefined;
  try {
    const info = await pool.query(`SELECT version() AS v, current_setting('synchronous_commit') AS sc, current_setting('max_connections') AS mc`);
    await pool.query('TRUNCATE tickets, idempotency_keys, outbox_events, outbox_dead_letters, api_keys, tenants');
    await pool.query('CHECKPOINT').catch(() => undefined); // start every run from a clean WAL position (needs superuser)
    log('truncated the bench tables');

    const prisma = createPrismaClient(url, 1, 'bench-setup');
    const tenant = await createApiKey(prisma, `bench-${runId}`);
    const baseTenant = await createApiKey(prisma, `bench-base-${runId}`);
    await prisma.$disconnect();

    const nodeArgs = [...requireHooks(), ...apiNodeArgs];
    if (cpuProfDir) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, '-r', join(__dirname, 'support', 'exit-on-sigterm.js'));
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    api = await startApi({
      mainJs: apiMainJs(distRoot),
      nodeArgs,
      port,
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn', RELAY_ENABLED: 'false', DB_POOL_MAX: String(poolSize) },
    });
    log(`API child pid ${api.pid} on ${api.baseUrl} (DB_POOL_MAX=${poolSize}), RSS ${mb(memoryOf(api.pid).rss)} MB`);
    const rss = rssSampler(api.pid);
    // open the baseline's connections up front, like the API's pool after warm-up
    await Promise.all(Array.from({ length: concurrency }, () => pool.connect().then((c) => c.release())));

    const ctx: Ctx = { baseUrl: api.baseUrl, apiKey: tenant.apiKey, apiPid: api.pid, pool, concurrency, runId, log };
    let createdTotal = 0;

    log(`warm-up: API create ${warmup}s`);
    const w1 = await runHttp(ctx, 'create', warmup, 'warm-up create');
    createdTotal += w1.ok;
    log(`warm-up: API create   ${phaseLine(w1)}`);
    log(`warm-up: baseline ${warmup}s`);
    const w2 = await runBaseline(ctx, pool, baseTenant.tenantId, warmup, 'warm-up baseline');
    log(`warm-up: baseline     ${phaseLine(w2)}`);

    const perRound: Array<{ base: Phase; create: Phase; replay: Phase }> = [];
    for (let r = 1; r <= rounds; r++) {
      log(`round ${r}/${rounds}: baseline ${seconds}s`);
      const base = await runBaseline(ctx, pool, baseTenant.tenantId, seconds, 'baseline');
      log(`round ${r}/${rounds}: baseline     ${phaseLine(base)}`);
      log(`round ${r}/${rounds}: API create ${seconds}s`);
      const create = await runHttp(ctx, 'create', seconds, 'create');
      createdTotal += create.ok;
      log(`round ${r}/${rounds}: API create   ${phaseLine(create)}`);
      log(`round ${r}/${rounds}: API replay ${seconds}s (${create.created.length} keys)`);
      const replay = await runHttp(ctx, 'replay', seconds, 'replay', create.created);
      log(`round ${r}/${rounds}: API replay   ${phaseLine(replay)}`);
      perRound.push({ base, create, replay });
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
    await api.stop();
    api = undefined;

    // ---------- report ----------
    const col = <K extends keyof typeof perRound[number]>(k: K) => perRound.map((x) => x[k]);
    const summary = (ps: Phase[]) => ({
      rate: median(ps.map((p) => p.rate)),
      min: Math.min(...ps.map((p) => p.rate)),
      max: Math.max(...ps.map((p) => p.rate)),
      spread: spreadPct(ps.map((p) => p.rate)),
      p50: median(ps.map((p) => p.p50)),
      p99: median(ps.map((p) => p.p99)),
    });
    const base = summary(col('base'));
    const create = summary(col('create'));
    const replay = summary(col('replay'));
    const createRatio = median(perRound.map((x) => x.create.rate / x.base.rate));
    const replayRatio = median(perRound.map((x) => x.replay.rate / x.create.rate));
    const rateCell = (s: ReturnType<typeof summary>) => `${int(s.rate)} (${int(s.min)}–${int(s.max)}, spread ${fixed(s.spread, 0)}%)`;
    const bar = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    const peakMb = mb(peakRss);
    const integrityOk = cnt[0].tickets === cnt[0].keys && cnt[0].keys === cnt[0].events && cnt[0].tickets >= createdTotal;
    const unexpected = perRound.reduce((n, x) => n + x.base.bad + x.create.bad + x.replay.bad, 0);
    const cpuInfo = cpus();
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    } catch {
      /* not a checkout */
    }

    const lines: string[] = [];
    lines.push(`## bench:create — ${new Date(started).toISOString()}`, '');
    lines.push(
      `Node ${process.version}, ${cpuInfo.length} CPUs (${cpuInfo[0]?.model.trim() ?? '?'}), load average at start ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ` +
        `${String(info.rows[0].v).split(' on ')[0]}, synchronous_commit=${info.rows[0].sc}, max_connections=${info.rows[0].mc}; ` +
        `concurrency ${concurrency}, pool size ${poolSize} (API DB_POOL_MAX) and ${concurrency} (baseline pg.Pool); ${rounds} rounds of ${seconds} s per phase, ` +
        `${apiNodeArgs.length ? `API node options ${apiNodeArgs.join(' ')}, ` : ''}` +
        `warm-up ${warmup} s; commit ${commit}.`,
      '',
    );
    lines.push(`| what | req/s (median of ${rounds}) | p50 ms | p99 ms | ratio |`, '|---|---|---|---|---|');
    lines.push(`| baseline: raw pg, BEGIN + 3 INSERT + COMMIT | ${rateCell(base)} | ${fixed(base.p50)} | ${fixed(base.p99)} | 1.00 |`);
    lines.push(`| API create: POST /v1/tickets, new key | ${rateCell(create)} | ${fixed(create.p50)} | ${fixed(create.p99)} | ${fixed(createRatio, 2)}x baseline |`);
    lines.push(`| API replay: same key again (201, Idempotent-Replayed) | ${rateCell(replay)} | ${fixed(replay.p50)} | ${fixed(replay.p99)} | ${fixed(replayRatio, 2)}x create |`);
    lines.push('');
    lines.push('Ratios are the median of the per-round ratios (each round runs baseline, create and replay back to back).', '');
    const cpuMs = (ps: Phase[]) => median(ps.map(cpuMsPerReq));
    const parts = (ps: Phase[]) =>
      `API ${fixed(median(ps.map((p) => (p.cpu.api * 10) / p.rate)), 2)} + bench ${fixed(median(ps.map((p) => (p.cpu.bench * 10) / p.rate)), 2)} + pg ${fixed(median(ps.map((p) => (p.cpu.pg * 10) / p.rate)), 2)}`;
    const others = median(perRound.flatMap((x) => [x.base.cpu.other, x.create.cpu.other, x.replay.cpu.other]));
    lines.push(
      `CPU per request (median; "bench" is the baseline's in-process client or autocannon): baseline ${fixed(cpuMs(col('base')), 2)} ms (${parts(col('base'))}), ` +
        `create ${fixed(cpuMs(col('create')), 2)} ms (${parts(col('create'))}), replay ${fixed(cpuMs(col('replay')), 2)} ms (${parts(col('replay'))}). ` +
        `If CPU were the only limit and the box did nothing else: baseline ~${int((cpuInfo.length * 1000) / cpuMs(col('base')))}/s, ` +
        `create ~${int((cpuInfo.length * 1000) / cpuMs(col('create')))}/s (ratio ~${fixed(cpuMs(col('base')) / cpuMs(col('create')), 2)}). ` +
        `Other processes used a median ${int(others)}% of one core during the phases${others > 25 ? ' (a busy box: treat the req/s as a lower bound)' : ''}.`,
      '',
    );
    lines.push('| bar (issue #2) | measured | result |', '|---|---|---|');
    lines.push(`| create >= 0.6x baseline | ${fixed(createRatio, 2)}x | ${bar(createRatio >= 0.6)} |`);
    lines.push(`| replay >= 1.5x create | ${fixed(replayRatio, 2)}x | ${bar(replayRatio >= 1.5)} |`);
    lines.push(`| API peak RSS < 300 MB | ${peakMb} MB (VmHWM) | ${bar(peakMb < 300)} |`);
    lines.push('');
    lines.push(`Per round (cpu: % of ONE core during the phase, the box has ${cpuInfo.length}; "other" is every other process on the box, e.g. concurrent jobs):`, '');
    lines.push('| round | phase | req/s | p50 ms | p99 ms | cpu api | cpu bench | cpu postgres | cpu other | CPU ms/req (api+bench+pg) | unexpected |', '|---|---|---|---|---|---|---|---|---|---|---|');
    perRound.forEach((x, i) => {
      for (const p of [x.base, x.create, x.replay]) {
        lines.push(
          `| ${i + 1} | ${p.name} | ${int(p.rate)} | ${fixed(p.p50)} | ${fixed(p.p99)} | ${int(p.cpu.api)}% | ${int(p.cpu.bench)}% | ${int(p.cpu.pg)}% | ${int(p.cpu.other)}% | ${fixed(cpuMsPerReq(p), 2)} | ${p.bad ? `${p.bad} (${p.badDetail})` : 0} |`,
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
    if (api) {
      process.stderr.write(`API stderr (tail):\n${api.stderrTail()}\n`);
      await api.stop();
    }
    await pool.end();
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
