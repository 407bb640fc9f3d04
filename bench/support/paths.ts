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

/** The options the services ship with (scripts/launch-flags.ts), so the benches start their children the same way. */
export { API_NODE_ARGS, CONSUMER_NODE_ARGS } from '../../scripts/launch-flags';

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
