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
// The binaries are `pg_config --bindir`'s (or the newest /usr/lib/postgresql/<v>/bin). As root, the
// server runs as the `postgres` user (PostgreSQL refuses to run as root). The bench gets
// DATABASE_URL=postgresql://postgres@127.0.0.1:<port>/tickets, migrated; everything else it inherits.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { repoRoot } from './support/paths';

const SETTINGS = {
  max_connections: '200',
  shared_buffers: '1GB',
  max_wal_size: '8GB',
  checkpoint_timeout: '30min',
  listen_addresses: '127.0.0.1',
  // Loaded only (no statement tracking until the extension is created, BENCH_PG_STATEMENTS).
  shared_preload_libraries: 'pg_stat_statements',
};

/** The statements that took the server's time during the bench, in every database, dropped ones too (BENCH_PG_STATEMENTS=1). */
async function printStatements(port: number): Promise<void> {
  const c = new Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
  await c.connect();
  try {
    const { rows } = await c.query<Record<string, string>>(
      `SELECT calls::text, round(total_exec_time)::text AS total_ms, round(mean_exec_time::numeric, 3)::text AS mean_ms,
              round((shared_blks_hit + shared_blks_read)::numeric / greatest(calls, 1), 1)::text AS blks,
              left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
         FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20`,
    );
    console.error('[fresh-postgres] statements by total time: calls | total ms | mean ms | buffers per call | query');
    for (const r of rows) console.error(`  ${r.calls} | ${r.total_ms} | ${r.mean_ms} | ${r.blks} | ${r.query}`);
  } finally {
    await c.end();
  }
}

function binDir(): string {
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    const root = '/usr/lib/postgresql';
    const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : [];
    if (versions.length === 0)
      throw new Error('no PostgreSQL binaries: install the server (initdb, pg_ctl) or put pg_config on PATH');
    return join(root, versions.sort((a, b) => Number(b) - Number(a))[0], 'bin');
  }
}

/** Runs a PostgreSQL binary, as the postgres user when this process is root. */
function pgCommand(bin: string, args: string[], asUser: string | undefined): void {
  const [cmd, argv] = asUser ? ['runuser', ['-u', asUser, '--', bin, ...args]] : [bin, args];
  execFileSync(cmd, argv, { stdio: ['ignore', 'ignore', 'inherit'] });
}

async function main(): Promise<void> {
  const [script, ...args] = process.argv.slice(2);
  if (!script) throw new Error('usage: node dist/bench/fresh-postgres.js <compiled bench .js> [its arguments]');
  const bin = binDir();
  const parent = process.env.BENCH_PG_DIR || (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const dir = mkdtempSync(join(parent, 'tickets-bench-pg-'));
  const data = join(dir, 'data');
  const asUser = process.getuid?.() === 0 ? 'postgres' : undefined;
  if (asUser) {
    const uid = Number(execFileSync('id', ['-u', asUser], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', asUser], { encoding: 'utf8' }));
    chownSync(dir, uid, gid);
  }
  const port = 40_000 + Math.floor(Math.random() * 10_000);
  const options = [`-p ${port}`, `-k ${dir}`, ...Object.entries(SETTINGS).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
  let started = false;
  const stop = () => {
    if (started) {
      started = false;
      try {
        pgCommand(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop'], asUser);
      } catch (err) {
        console.error(`[fresh-postgres] stopping the server failed: ${(err as Error).message}`);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    console.error(`[fresh-postgres] initdb in ${data} (${bin})`);
    pgCommand(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], asUser);
    pgCommand(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', 'start'], asUser);
    started = true;
    const url = `postgresql://postgres@127.0.0.1:${port}/tickets`;
    const admin = new Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    if (process.env.BENCH_PG_STATEMENTS === '1') await admin.query('CREATE EXTENSION pg_stat_statements');
    await admin.query('CREATE DATABASE tickets');
    await admin.end();
    execFileSync(process.execPath, [join(repoRoot(), 'scripts', 'db-migrate.mjs')], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    console.error(
      `[fresh-postgres] PostgreSQL on port ${port} (${Object.entries(SETTINGS)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}); running ${script}`,
    );
    const code = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, [...process.execArgv, script, ...args], {
        stdio: 'inherit',
        env: { ...process.env, DATABASE_URL: url },
      });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGINT', forward).on('SIGTERM', forward);
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
    });
    process.exitCode = code;
    if (process.env.BENCH_PG_STATEMENTS === '1')
      await printStatements(port).catch((err) =>
        console.error(`[fresh-postgres] statements: ${(err as Error).message}`),
      );
  } finally {
    stop();
  }
}

main().catch((err) => {
  console.error(`[fresh-postgres] ${(err as Error).message}`);
  process.exit(1);
});
