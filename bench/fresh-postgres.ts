// Runs a bench against a PostgreSQL server of its own, started for it and removed afterwards:
//
//   npm run bench:fresh-pg -- dist/bench/relay-cost.js          (any compiled bench, with its arguments)
//
// A long-lived server carries the state of whatever ran on it before: dirty buffers of earlier runs
// still being written, checkpoints forced by every CREATE DATABASE of the tests, backends writing
// buffers themselves with `shared_buffers` at its 128 MB default. On a 2-core VM that moved
// PostgreSQL's CPU in the same latency bench between 29 % and 113 % of a core (docs/benchmarks.md).
// This server starts empty, with room for the benches' connections (max_connections 200), buffers
// for their working set (shared_buffers 1 GB) and no checkpoint during a run (checkpoint_timeout
// 30 min, max_wal_size 8 GB). fsync and synchronous_commit stay on, as shipped.
//
// Its data directory goes under BENCH_PG_DIR (default /dev/shm when it exists, so the disk's own
// state does not enter the measurement either; set BENCH_PG_DIR to a disk path to include it).
// The server is scripts/chaos/pg-cluster.ts's (the newest installed PostgreSQL; as root it runs as
// the `postgres` user, since PostgreSQL refuses to run as root), on a port the OS hands out. The bench gets
// DATABASE_URL=postgresql://postgres@127.0.0.1:<port>/tickets, migrated; everything else it inherits.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { PgCluster } from '../scripts/chaos/pg-cluster';
import { freePort } from '../scripts/free-port';
import { repoRoot } from './support/paths';

const SETTINGS = {
  shared_buffers: '1GB',
  max_wal_size: '8GB',
  checkpoint_timeout: '30min',
  fsync: 'on',
  // Loaded only (no statement tracking until the extension is created, BENCH_PG_STATEMENTS).
  shared_preload_libraries: 'pg_stat_statements',
};
const MAX_CONNECTIONS = 200;

/**
 * The statements that took the server's time during the bench, in every database, dropped ones too
 * (BENCH_PG_STATEMENTS=1): the 30 that took the most, and every one PostgreSQL JIT-compiled (its compile time
 * is CPU spent before the statement runs, at each execution).
 */
async function printStatements(port: number): Promise<void> {
  const c = new Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
  await c.connect();
  try {
    const { rows } = await c.query<Record<string, string>>(
      `SELECT calls::text, round(total_exec_time)::text AS total_ms, round(mean_exec_time::numeric, 3)::text AS mean_ms,
              round((shared_blks_hit + shared_blks_read)::numeric / greatest(calls, 1), 1)::text AS blks,
              round((jit_generation_time + jit_inlining_time + jit_optimization_time + jit_emission_time
                     + coalesce((to_jsonb(s) ->> 'jit_deform_time')::float8, 0))::numeric, 1)::text AS jit_ms, -- deform: PostgreSQL 17+
              left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
         FROM (SELECT *, row_number() OVER (ORDER BY total_exec_time DESC) AS rank FROM pg_stat_statements) s
        WHERE rank <= 30 OR jit_functions > 0
        ORDER BY rank`,
    );
    console.error(
      '[fresh-postgres] statements by total time (the top 30, and every JIT-compiled one): calls | total ms | mean ms | buffers per call | JIT compile ms | query',
    );
    for (const r of rows)
      console.error(`  ${r.calls} | ${r.total_ms} | ${r.mean_ms} | ${r.blks} | ${r.jit_ms} | ${r.query}`);
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const [script, ...args] = process.argv.slice(2);
  if (!script) throw new Error('usage: node dist/bench/fresh-postgres.js <compiled bench .js> [its arguments]');
  const parent = process.env.BENCH_PG_DIR || (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const dir = mkdtempSync(join(parent, 'tickets-bench-pg-'));
  let cluster: PgCluster | undefined;
  // Set before the server is asked to start: a start that times out may still leave one running.
  let mayRun = false;
  const stop = async () => {
    if (cluster && mayRun) {
      mayRun = false;
      await cluster
        .stop('fast')
        .catch((err) => console.error(`[fresh-postgres] fast stop failed: ${(err as Error).message}`));
    }
    // An immediate stop (for a server the fast one did not stop), then the directory.
    if (cluster) await cluster.destroy();
    else rmSync(dir, { recursive: true, force: true });
  };
  let child: ChildProcess | undefined;
  // A signal while the bench runs goes to the bench (its own cleanup runs, then ours); before or after
  // it, the server is stopped and its directory removed here.
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    process.on(signal, () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
      else void stop().finally(() => process.exit(code));
    });
  }
  try {
    const port = await freePort();
    cluster = new PgCluster({ dir, port, maxConnections: MAX_CONNECTIONS, settings: SETTINGS });
    console.error(`[fresh-postgres] initdb in ${dir}`);
    await cluster.init();
    mayRun = true;
    await cluster.start();
    const url = cluster.urlFor('tickets');
    const admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    if (process.env.BENCH_PG_STATEMENTS === '1') await admin.query('CREATE EXTENSION pg_stat_statements');
    await admin.query('CREATE DATABASE tickets');
    await admin.end();
    execFileSync(process.execPath, [join(repoRoot(), 'scripts', 'db-migrate.mjs')], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    console.error(
      `[fresh-postgres] PostgreSQL on port ${port} (max_connections=${MAX_CONNECTIONS}, ${Object.entries(SETTINGS)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}); running ${script}`,
    );
    const code = await new Promise<number>((resolve) => {
      child = spawn(process.execPath, [...process.execArgv, script, ...args], {
        stdio: 'inherit',
        env: { ...process.env, DATABASE_URL: url },
      });
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
    });
    process.exitCode = code;
    if (process.env.BENCH_PG_STATEMENTS === '1')
      await printStatements(port).catch((err) =>
        console.error(`[fresh-postgres] statements: ${(err as Error).message}`),
      );
  } finally {
    await stop();
  }
}

main().catch((err) => {
  console.error(`[fresh-postgres] ${(err as Error).message}`);
  process.exit(1);
});
