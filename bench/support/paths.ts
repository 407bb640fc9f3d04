import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from 'pg';

/** The repository root, found upwards from the compiled file (dist/ or a private outDir); else the cwd. */
export function repoRoot(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'scripts', 'db-migrate.mjs'))) return dir;
  }
  return process.cwd();
}

/** Only the `-r <hook>` options of this process, so child processes resolve @tickets/* the same way. */
export function requireHooks(): string[] {
  const out: string[] = [];
  const a = process.execArgv;
  for (let i = 0; i < a.length; i++) {
    if ((a[i] === '-r' || a[i] === '--require') && a[i + 1]) out.push('-r', a[++i]);
    else if (a[i].startsWith('--require=')) out.push(a[i]);
  }
  return out;
}

/**
 * The V8 heap cap the consumer, relay and stats consumer run with (npm run start:consumer, scripts/start.sh;
 * the API: API_NODE_ARGS). Without it V8 sizes old space from the machine's RAM and lets
 * garbage pile up to hundreds of MB before a full collection; the semi-space cap keeps Node 24's larger
 * young generation from adding 40-55 MB of peak RSS (docs/benchmarks.md).
 */
export const HEAP_CAP = ['--max-old-space-size=192', '--max-semi-space-size=16'];

/**
 * Every service process (scripts/start.sh, the start:* scripts, docker-compose, the image) compiles with
 * TurboFan on one background thread instead of as many as V8's pool has. The functions on a request's path
 * reach TurboFan after about the same number of calls, so they tier up together: 80 compilations (219 KB of
 * code) within 2 s in the API, 57 in the consumer at the same moment, after some 11,000 tickets. On a 2-core
 * box those threads took the cores from every process; in loop 1 of the latency bench, stalls of 20 ms or
 * more fell from 0-6 to 0-1 per process (docs/benchmarks.md, "TurboFan's tier-up").
 */
export const JIT_THREADS = ['--concurrent-turbofan-max-threads=1'];

/**
 * The notification consumer's (npm run start:consumer, scripts/start.sh, docker-compose): HEAP_CAP, and old space
 * grown to twice what survived a full collection instead of at most 1.3x (V8's MaxGrowingFactor under a cap below
 * its default minimum heap size).
 * At 1.3x the consumer, with ~23 MB live, ran a full collection every 2 s for the first minutes of load (11-12
 * per 20 s loop at 300 events/s), and their marking threads took the cores from every process on a 2-core box;
 * at 2x it ran 0-4 per loop, for ~25 MB more peak RSS (docs/benchmarks.md, "The consumer's full collections").
 */
export const CONSUMER_NODE_ARGS = [...HEAP_CAP, '--heap-growing-percent=100', ...JIT_THREADS];

/**
 * The API's (npm run start:api, scripts/start.sh, the Docker image): a young generation half HEAP_CAP's: the
 * API's peak RSS under bench:create 200-211 MB against 213-229 MB with 16, at the same CPU per create
 * (docs/benchmarks.md, "Memory"); and JIT_THREADS.
 */
export const API_NODE_ARGS = ['--max-old-space-size=192', '--max-semi-space-size=8', ...JIT_THREADS];

/** A positive number from the environment, or `dflt` when unset; anything else stops the bench with the name. */
export function positiveNumberEnv(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}=${v} is not a positive number`);
  return n;
}

/**
 * A benchmark's own database next to DATABASE_URL's (`<name>_<suffix>`): `create()` drops any
 * leftover and migrates a fresh one, `drop()` removes it. `env` is what the migration runs with.
 */
export function scratchDatabase(baseUrl: string, suffix: string, env: NodeJS.ProcessEnv = process.env) {
  const url = new URL(baseUrl);
  const name = `${decodeURIComponent(url.pathname.slice(1))}_${suffix}`;
  url.pathname = `/${name}`;
  const adminUrl = new URL(baseUrl);
  adminUrl.pathname = '/postgres';
  const dropSql = `DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`;
  const admin = async (sql: string) => {
    const c = new Client({ connectionString: adminUrl.toString() });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  return {
    name,
    url: url.toString(),
    async create(): Promise<void> {
      await admin(dropSql);
      execFileSync(process.execPath, [join(repoRoot(), 'scripts', 'db-migrate.mjs'), 'deploy'], {
        env: { ...env, DATABASE_URL: url.toString() },
        stdio: 'pipe',
      });
    },
    drop: (): Promise<void> => admin(dropSql),
  };
}
