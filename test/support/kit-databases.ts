// Databases of the consumer kit's own tests: empty ones (a downstream service's own database) and
// ones at the ticket service's Prisma migrations only (a deployment before the kit had its schema).
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { TEST_DATABASE_URL } from './env';
import { ROOT } from './stack';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

async function asAdmin<T>(work: (c: Client) => Promise<T>): Promise<T> {
  const admin = new URL(TEST_DATABASE_URL);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** `<test db>_kit_<label>`, created empty; with `prismaOnly`, at the service's Prisma migrations (no kit schema). */
export async function scratchDatabase(label: string, opts: { prismaOnly?: boolean } = {}): Promise<ScratchDatabase> {
  const base = new URL(TEST_DATABASE_URL);
  const name = `${decodeURIComponent(base.pathname.slice(1))}_kit_${label}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  await asAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${name}"`);
  });
  if (opts.prismaOnly)
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'db-migrate.mjs'), 'deploy', '--prisma-only'], {
      env: { ...process.env, DATABASE_URL: url.toString() },
      stdio: 'pipe',
    });
  return {
    url: url.toString(),
    drop: () =>
      asAdmin(async (c) => {
        await new Promise((r) => setTimeout(r, 200));
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      }),
  };
}

/** The ticket service's migration path (`npm run db:migrate`): Prisma's migrations, then the kit's. */
export function serviceMigrate(url: string): string {
  return execFileSync(process.execPath, [join(ROOT, 'scripts', 'db-migrate.mjs'), 'deploy'], {
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
  });
}

/** The compiled `ticket-events` bin (npm run build first), as a child process. */
export const KIT_BIN = join(ROOT, 'libs', 'event-consumer', 'dist', 'bin', 'ticket-events.js');

export function runKitBin(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    // Until the kit is an installed package, `@tickets/contracts` resolves through the repository's alias hook.
    const child = execFile(
      process.execPath,
      [KIT_BIN, ...args],
      { env: { PATH: process.env.PATH, ...env }, timeout: 120_000 },
      (err, out, errText) => resolve({ code: child.exitCode ?? (err ? 1 : 0), out: String(out), err: String(errText) }),
    );
  });
}
