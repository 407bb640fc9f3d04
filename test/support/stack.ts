import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../scripts/free-port';
import { join } from 'node:path';
import { Pool } from 'pg';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig, type AppConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createPrismaClient } from '@tickets/db';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { createApiKey } from '@tickets/tenants';
import { trackChild } from './children';
import { TEST_DATABASE_URL } from './env';

export const ROOT = join(__dirname, '..', '..');

export interface TestTenant {
  slug: string;
  tenantId: string;
  apiKey: string;
}

export interface TestStack extends TestTenant {
  baseUrl: string;
  config: AppConfig;
  app: NestFastifyApplication;
  /** A pg pool on the test database, for assertions. */
  db: Pool;
  /** A new tenant (with its own API key) on the same stack. */
  newTenant(prefix?: string): Promise<TestTenant>;
  stop(): Promise<void>;
}

/** The test configuration: the real test database, random port, quiet logs, plus `env` overrides. */
export function testConfig(env: Record<string, string> = {}): AppConfig {
  return loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    RELAY_ENABLED: 'false',
    RECONCILE_INTERVAL: 'off',
    DB_POOL_MAX: '10',
    // Tests push one tenant far past the production default (docs/security.md): the limit is off unless a
    // test sets it (edge-limits and mcp-http do, to test it).
    RATE_LIMIT_PER_SECOND: '0',
    ...env,
  });
}

export async function createTenant(prefix = 'test'): Promise<TestTenant> {
  const prisma = createPrismaClient(TEST_DATABASE_URL, 1, 'tests');
  try {
    const slug = `${prefix}-${randomUUID().slice(0, 8)}`;
    const k = await createApiKey(prisma, slug);
    return { slug, tenantId: k.tenantId, apiKey: k.apiKey };
  } finally {
    await prisma.$disconnect();
  }
}

/** A real API (Nest + Fastify) on 127.0.0.1:<random port> against the real test database, with a fresh tenant. */
export async function startTestStack(opts: { env?: Record<string, string> } = {}): Promise<TestStack> {
  const config = testConfig(opts.env);
  const app = await createApiApp(config, createLogger(config.logLevel, 'ticket-api-test'));
  await app.listen(0, '127.0.0.1');
  const baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const tenant = await createTenant();
  const db = new Pool({ connectionString: TEST_DATABASE_URL, max: 4 });
  return {
    ...tenant,
    baseUrl,
    config,
    app,
    db,
    newTenant: createTenant,
    async stop() {
      await app.close();
      await db.end();
    },
  };
}

export { freePort };

/** The API as a separate OS process (compiled dist/), for the cross-process tests. Needs `npm run build` first. */
export async function startApiProcess(
  env: Record<string, string> = {},
): Promise<{ baseUrl: string; proc: ChildProcess; stop(): Promise<void> }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const proc = trackChild(
      spawn(process.execPath, [join(ROOT, 'apps/ticket-api/dist/main.js')], {
        env: {
          ...process.env,
          DATABASE_URL: TEST_DATABASE_URL,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'warn',
          RELAY_ENABLED: 'false',
          RECONCILE_INTERVAL: 'off',
          RATE_LIMIT_PER_SECOND: '0',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    // The process's log (pino writes to stdout) and stderr, the last 8 KB, for the error message.
    let output = '';
    const keep = (d: Buffer) => (output = (output + d.toString()).slice(-8_192));
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    const baseUrl = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    let up = false;
    while (!up) {
      if (proc.exitCode !== null) break;
      try {
        up = (await fetch(`${baseUrl}/health/live`)).ok;
      } catch {
        /* not up yet */
      }
      if (!up && Date.now() > deadline) throw new Error(`API process did not start: ${output}`);
      if (!up) await new Promise((r) => setTimeout(r, 100));
    }
    if (!up) {
      // Another process took the port between freePort() and the API's listen: try another one.
      if ((output.includes('EADDRINUSE') || output.includes('"cause":"port_in_use"')) && attempt < 3) continue;
      throw new Error(`API process exited with ${proc.exitCode}: ${output}`);
    }
    return {
      baseUrl,
      proc,
      stop: () =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null) return resolve();
          proc.once('exit', () => resolve());
          proc.kill('SIGTERM');
        }),
    };
  }
}

/** POST JSON with an Idempotency-Key, returning status, headers and the raw body text. */
export async function post(
  baseUrl: string,
  path: string,
  apiKey: string,
  body: unknown,
  key?: string,
  extra: Record<string, string> = {},
) {
  const headers: Record<string, string> = {
    authorization: `Bearer ${apiKey}`,
    'content-type': 'application/json',
    ...extra,
  };
  if (key !== undefined) headers['idempotency-key'] = `"${key}"`;
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

export async function get(baseUrl: string, path: string, apiKey: string) {
  const res = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Row counts of one tenant's tickets, idempotency keys and outbox events. */
export async function counts(db: Pool, tenantId: string) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM tickets WHERE tenant_id = $1)::int AS tickets,
            (SELECT count(*) FROM idempotency_keys WHERE tenant_id = $1)::int AS keys,
            (SELECT count(*) FROM outbox_events WHERE tenant_id = $1)::int AS events`,
    [tenantId],
  );
  return rows[0] as { tickets: number; keys: number; events: number };
}
