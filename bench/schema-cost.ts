// What the project's schema costs the create transaction, one suspect at a time (issue #13).
//
//   npm run bench:schema-cost     (build, then node dist/bench/schema-cost.js)
//
// The three-insert transaction of bench:create (BEGIN; INSERT tickets; INSERT idempotency_keys; INSERT
// outbox_events; COMMIT over `pg`, bench/support/three-inserts.ts) runs against variants of the schema, each
// in its own database: `<bench db>_sc` is migrated with scripts/db-migrate.mjs deploy (the real migrations),
// every variant is a `CREATE DATABASE ... TEMPLATE` copy of it changed with ALTER/DROP. Rounds are
// interleaved (every variant once per round, in the same order) and each variant's rate is divided by the
// plain tables' rate of the same round; the report gives the median of those ratios, plus Postgres CPU per
// commit and what the active backends were waiting on (pg_stat_activity sampled every 25 ms).
// During every phase one extra connection LISTENs on the relay's channel, as the relay does in production.
//
// Env: BENCH_DATABASE_URL (as bench:create; the name must end in "bench"; the scratch databases are
// `<name>_sc` and `<name>_sc_<variant>`, dropped at the end), SCHEMA_COST_CONCURRENCY (32),
// SCHEMA_COST_SECONDS per phase (5), SCHEMA_COST_ROUNDS (3), SCHEMA_COST_VARIANTS (comma-separated names;
// default all; plain and schema always run).
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Client, Pool } from 'pg';
import { cpuMeter, type CpuShares } from './support/cpu-meter';
import { positiveNumberEnv as num, repoRoot, scratchDatabase } from './support/paths';
import { fixed, int, median } from './support/stats';
import { plainTablesDdl, runThreeInsertLoop } from './support/three-inserts';

const CHANNEL = 'outbox_events';

/** The secondary indexes the migrations put on the three tables (primary keys excluded). */
const INDEXES: Array<[name: string, serves: string]> = [
  ['tickets_tenant_id_created_at_idx', 'GET /v1/tickets listing (tenant, created_at)'],
  ['tickets_tenant_id_external_ref_key', 'UNIQUE: externalRef dedup, and the race backstop'],
  ['idempotency_keys_expires_at_idx', 'purge of expired keys'],
  ['idempotency_keys_replay_until_idx', 'replay window sweep'],
  ['idempotency_keys_ticket_id_idx', 'key lookup by ticket (reconcile)'],
  ['outbox_events_event_id_key', 'UNIQUE event_id'],
  ['outbox_events_aggregate_id_seq_idx', 'relay: an earlier row of the same ticket still pending'],
];

interface Variant {
  name: string;
  what: string;
  /** Run in the variant's copy of the migrated database. */
  sql: string[];
  /** Tables' schema inside the copy. */
  schema?: string;
  /** Sends `SELECT pg_notify(channel, '')` from its own connection every `coalesceMs` during the phase. */
  coalesceMs?: number;
}

const JSON_COLUMNS: Array<[string, string]> = [
  ['tickets', 'requester'],
  ['tickets', 'metadata'],
  ['idempotency_keys', 'request_body'],
  ['outbox_events', 'payload'],
  ['outbox_events', 'headers'],
];

/** The statement-level NOTIFY trigger the outbox had until migration 20261201010000_outbox_wakeup. */
const notifyTrigger = (body: string) => [
  `CREATE FUNCTION outbox_events_notify() RETURNS trigger LANGUAGE plpgsql AS '${body.replace(/'/g, "''")}'`,
  `CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_notify()`,
];

const VARIANTS: Variant[] = [
  {
    name: 'plain',
    what: '(a) plain tables: same column types, primary keys only, no trigger',
    sql: plainTablesDdl('plain'),
    schema: 'plain',
  },
  { name: 'schema', what: '(b) the migrated schema as is (no trigger since 20261201010000_outbox_wakeup)', sql: [] },
  {
    name: 'notify-trigger',
    what: "schema with the statement-level NOTIFY trigger it had before 20261201010000_outbox_wakeup (pg_notify('outbox_events') in every create transaction)",
    sql: notifyTrigger(`BEGIN PERFORM pg_notify('${CHANNEL}', ''); RETURN NULL; END`),
  },
  {
    name: 'trigger-without-notify',
    what: 'schema with that trigger, its PL/pgSQL function not notifying (the call alone)',
    sql: notifyTrigger('BEGIN RETURN NULL; END'),
  },
  {
    name: 'coalesced-notify',
    what: 'schema; a separate connection sends one NOTIFY every 10 ms outside the create transactions (what OutboxNotifier does under load)',
    sql: [],
    coalesceMs: 10,
  },
  {
    name: 'no-queue-trigger',
    what: "schema without the trigger that queues every outbox insert in outbox_pending (the relay's queue, since 20261203000000_outbox_pending_queue)",
    sql: ['DROP TRIGGER outbox_events_enqueue ON outbox_events'],
  },
  {
    name: 'no-secondary-indexes',
    what: `schema without any of the ${INDEXES.length} secondary indexes`,
    sql: INDEXES.map(([i]) => `DROP INDEX ${i}`),
  },
  ...INDEXES.map(([i, serves]) => ({
    name: `no-${i}`,
    what: `schema without ${i} (${serves})`,
    sql: [`DROP INDEX ${i}`],
  })),
  ...(
    [
      ['tickets', 'tickets_'],
      ['idempotency-keys', 'idempotency_keys_'],
      ['outbox', 'outbox_events_'],
    ] as const
  ).map(([table, prefix]) => {
    const idx = INDEXES.map(([i]) => i).filter((i) => i.startsWith(prefix));
    return {
      name: `no-${table}-indexes`,
      what: `schema without the ${idx.length} secondary indexes of ${prefix.slice(0, -1)}`,
      sql: idx.map((i) => `DROP INDEX ${i}`),
    };
  }),
  {
    name: 'text-not-jsonb',
    what: 'schema with the five JSON columns as text instead of jsonb',
    sql: JSON_COLUMNS.map(([t, c]) => `ALTER TABLE ${t} ALTER COLUMN ${c} DROP DEFAULT, ALTER COLUMN ${c} TYPE text`),
  },
];

interface Phase {
  rate: number;
  p50: number;
  p99: number;
  bad: number;
  lastError: string;
  cpu: CpuShares;
  notifications: number;
  /** wait event ("type:event", or "CPU" when none) -> samples of active backends. */
  waits: Map<string, number>;
}

function dbUrl(base: string, name: string): string {
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin(base: string, sql: string): Promise<void> {
  const c = new Client({ connectionString: dbUrl(base, 'postgres') });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}

async function runPhase(
  url: string,
  v: Variant,
  concurrency: number,
  seconds: number,
  tenantId: string,
  runId: string,
): Promise<Phase> {
  const pool = new Pool({
    connectionString: url,
    max: concurrency,
    application_name: 'schema-cost',
    idleTimeoutMillis: 0,
  });
  const listener = new Client({ connectionString: url, application_name: 'schema-cost-listener' });
  const side = new Client({ connectionString: url, application_name: 'schema-cost-side' });
  let notifications = 0;
  const waits = new Map<string, number>();
  try {
    await Promise.all(Array.from({ length: concurrency }, () => pool.connect().then((c) => c.release())));
    await listener.connect();
    listener.on('notification', () => notifications++);
    await listener.query(`LISTEN ${CHANNEL}`);
    await side.connect();
    let running = true;
    // The side connection samples wait events (and, for coalesced-notify, sends the periodic NOTIFY).
    const sampler = (async () => {
      let lastNotify = 0;
      while (running) {
        const now = Date.now();
        if (v.coalesceMs && now - lastNotify >= v.coalesceMs) {
          lastNotify = now;
          await side.query(`SELECT pg_notify($1, '')`, [CHANNEL]);
        }
        const { rows } = await side.query<{ w: string; n: number }>(
          `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = 'schema-cost' AND state = 'active' GROUP BY 1`,
        );
        for (const r of rows) waits.set(r.w, (waits.get(r.w) ?? 0) + r.n);
        await new Promise((r) => setTimeout(r, v.coalesceMs ? Math.min(v.coalesceMs, 25) : 25));
      }
    })();
    const meter = await cpuMeter(pool);
    const r = await runThreeInsertLoop(pool, {
      schema: v.schema ?? 'public',
      tenantId,
      concurrency,
      seconds,
      keyPrefix: `sc-${runId}-${v.name}`,
    });
    const cpu = await meter();
    running = false;
    await sampler;
    return {
      rate: r.ok / r.seconds,
      p50: r.p50,
      p99: r.p99,
      bad: r.bad,
      lastError: r.lastError,
      cpu,
      notifications,
      waits,
    };
  } finally {
    await Promise.allSettled([pool.end(), listener.end(), side.end()]);
  }
}

export async function runSchemaCost(): Promise<string> {
  const concurrency = num('SCHEMA_COST_CONCURRENCY', 32);
  const seconds = num('SCHEMA_COST_SECONDS', 5);
  const rounds = num('SCHEMA_COST_ROUNDS', 3);
  const wanted = process.env.SCHEMA_COST_VARIANTS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const variants = VARIANTS.filter(
    (v) => !wanted || v.name === 'plain' || v.name === 'schema' || wanted.includes(v.name),
  );
  const base = process.env.BENCH_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/tickets_bench';
  const baseName = decodeURIComponent(new URL(base).pathname.slice(1));
  if (!/(^|_)bench$/.test(baseName))
    throw new Error(`BENCH_DATABASE_URL must name a database ending in "bench" (got ${baseName})`);
  const started = Date.now();
  const log = (line: string) => console.log(`[${fixed((Date.now() - started) / 1000).padStart(6)}s] ${line}`);
  const runId = randomBytes(4).toString('hex');
  const tenantId = randomUUID();

  const template = scratchDatabase(base, 'sc');
  log(`migrating ${template.name} (scripts/db-migrate.mjs deploy)`);
  await template.create();
  const copies = variants.map((v) => ({ v, name: `${template.name}_${v.name.replace(/-/g, '_')}`.slice(0, 63) }));
  try {
    for (const { v, name } of copies) {
      await admin(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin(base, `CREATE DATABASE "${name}" TEMPLATE "${template.name}"`);
      const c = new Client({ connectionString: dbUrl(base, name) });
      await c.connect();
      try {
        for (const sql of v.sql) await c.query(sql);
      } finally {
        await c.end();
      }
    }
    log(`${copies.length} variant databases ready`);
    const info = await (async () => {
      const c = new Client({ connectionString: dbUrl(base, template.name) });
      await c.connect();
      try {
        return (
          await c.query(
            `SELECT version() AS v, current_setting('synchronous_commit') AS sc, current_setting('commit_delay') AS cd`,
          )
        ).rows[0];
      } finally {
        await c.end();
      }
    })();

    for (const { v, name } of copies) {
      const p = await runPhase(dbUrl(base, name), v, concurrency, 1, tenantId, `${runId}-w`);
      log(`warm-up ${v.name.padEnd(44)} ${int(p.rate).padStart(6)}/s`);
    }
    const results = new Map<string, Phase[]>(variants.map((v) => [v.name, []]));
    for (let r = 1; r <= rounds; r++) {
      for (const { v, name } of copies) {
        const p = await runPhase(dbUrl(base, name), v, concurrency, seconds, tenantId, runId);
        results.get(v.name)!.push(p);
        log(
          `round ${r}/${rounds} ${v.name.padEnd(44)} ${int(p.rate).padStart(6)}/s  pg ${fixed((p.cpu.pg * 10) / p.rate, 2)} ms/commit  ` +
            `other ${int(p.cpu.other)}%${p.bad ? `  ERRORS ${p.bad}: ${p.lastError}` : ''}`,
        );
      }
    }

    // ---------- report ----------
    const plain = results.get('plain')!;
    const schema = results.get('schema')!;
    const toPlain = (ps: Phase[]) => median(ps.map((p, i) => p.rate / plain[i].rate));
    const toSchema = (ps: Phase[]) => median(ps.map((p, i) => p.rate / schema[i].rate));
    const pgMs = (ps: Phase[]) => median(ps.map((p) => (p.cpu.pg * 10) / p.rate));
    const clientMs = (ps: Phase[]) => median(ps.map((p) => (p.cpu.bench * 10) / p.rate));
    const topWaits = (ps: Phase[]) => {
      const sum = new Map<string, number>();
      for (const p of ps) for (const [k, n] of p.waits) sum.set(k, (sum.get(k) ?? 0) + n);
      const total = [...sum.values()].reduce((a, b) => a + b, 0) || 1;
      return [...sum]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, n]) => `${k} ${int((n / total) * 100)}%`)
        .join(', ');
    };
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
        cwd: repoRoot(),
        stdio: ['ignore', 'pipe', 'ignore'],
      })
        .toString()
        .trim();
    } catch {
      /* not a checkout */
    }
    const cpuInfo = cpus();
    const lines: string[] = [];
    lines.push(`## bench:schema-cost — ${new Date(started).toISOString()}`, '');
    lines.push(
      `Node ${process.version}, ${cpuInfo.length} CPUs (${cpuInfo[0]?.model.trim() ?? '?'}), load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ` +
        `${String(info.v).split(' on ')[0]}, synchronous_commit=${info.sc}, commit_delay=${info.cd}; concurrency ${concurrency} (pg.Pool of the same size), ` +
        `${rounds} rounds of ${seconds} s per variant, variants interleaved; one LISTEN connection per phase; commit ${commit}.`,
      '',
    );
    lines.push(
      '| variant | commits/s (median) | x (a) plain | x (b) schema | pg CPU ms/commit | client CPU ms/commit | p50 / p99 ms | backends waiting on (share of active samples) | other (% of one core) |',
      '|---|---|---|---|---|---|---|---|---|',
    );
    for (const v of variants) {
      const ps = results.get(v.name)!;
      lines.push(
        `| \`${v.name}\`: ${v.what} | ${int(median(ps.map((p) => p.rate)))} | ${fixed(toPlain(ps), 2)} | ${fixed(toSchema(ps), 2)} | ${fixed(pgMs(ps), 2)} | ${fixed(clientMs(ps), 2)} | ` +
          `${fixed(median(ps.map((p) => p.p50)))} / ${fixed(median(ps.map((p) => p.p99)))} | ${topWaits(ps)} | ${int(median(ps.map((p) => p.cpu.other)))}% |`,
      );
    }
    lines.push('');
    lines.push(
      "Ratios: each variant's rate divided by the plain tables' (or the unchanged schema's) rate of the same round, median over the rounds. " +
        '"pg CPU" is every Postgres process of the variant\'s database plus the shared background processes (WAL writer, checkpointer), read from /proc. ' +
        '"Lock:object" is the heavyweight lock PostgreSQL takes at commit for a transaction that queued a NOTIFY (one for the whole cluster); ' +
        '"IO:WALSync" / "LWLock:WALWrite" are commits waiting for the WAL flush; "CPU" is an active backend with no wait event.',
      '',
    );
    lines.push('Per round (commits/s):', '');
    lines.push(
      `| variant | ${Array.from({ length: rounds }, (_, i) => `round ${i + 1}`).join(' | ')} | notifications received (last round) | errors |`,
    );
    lines.push(`|---|${Array.from({ length: rounds }, () => '---|').join('')}---|---|`);
    for (const v of variants) {
      const ps = results.get(v.name)!;
      lines.push(
        `| ${v.name} | ${ps.map((p) => `${int(p.rate)} (other ${int(p.cpu.other)}%)`).join(' | ')} | ${int(ps[ps.length - 1].notifications)} | ${ps.reduce((n, p) => n + p.bad, 0)} |`,
      );
    }
    const report = lines.join('\n') + '\n';
    const dir = join(repoRoot(), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `schema-cost-${new Date(started).toISOString().replace(/:/g, '').replace(/\..*$/, '')}.md`);
    writeFileSync(file, report);
    console.log(`\n${report}`);
    log(`written to ${file}`);
    return report;
  } finally {
    for (const { name } of copies)
      await admin(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    await template.drop().catch(() => undefined);
  }
}

if (require.main === module) {
  runSchemaCost().then(
    () => process.exit(0),
    (e) => {
      console.error(`bench:schema-cost failed: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
