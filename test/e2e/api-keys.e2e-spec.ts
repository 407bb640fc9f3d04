// The API key lifecycle across real processes: two API processes with a 60 s key cache, and the real
// CLI (apps/cli/dist) as a third. A revoke must reach the other process through the api_keys NOTIFY
// (the cache alone would keep the key working for 60 s, past every deadline here); a rotation keeps
// both keys working until the cut-over and only the new one after it; an expired key is refused; and
// last_used_at is written on use.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { ROOT, get, startApiProcess } from '../support/stack';
import { TEST_DATABASE_URL } from '../support/env';

/** Long enough that only the change notification can explain a refusal within the deadlines below. */
const CACHE_TTL = '60s';
const DEADLINE_MS = 10_000;

function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'apps/cli/dist/main.js'), 'api-keys', ...argv],
      { env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL, LOG_LEVEL: 'warn' } },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    );
  });
}

/** Polls until `probe` answers `want` or the deadline passes; resolves to when it did (or throws). */
async function waitForStatus(probe: () => Promise<number>, want: number, deadlineMs: number): Promise<number> {
  const until = Date.now() + deadlineMs;
  let last = 0;
  while (Date.now() < until) {
    last = await probe();
    if (last === want) return Date.now();
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`still ${last}, not ${want}, after ${deadlineMs} ms`);
}

describe('API key lifecycle across processes', () => {
  let a: Awaited<ReturnType<typeof startApiProcess>>;
  let b: Awaited<ReturnType<typeof startApiProcess>>;
  let db: Pool;
  const status = async (baseUrl: string, key: string) => (await get(baseUrl, '/v1/stats', key)).status;
  const newKey = async (opts: { expiresAt?: Date } = {}) => {
    const prisma = createPrismaClient(TEST_DATABASE_URL, 1, 'api-keys-e2e');
    try {
      return await createApiKey(prisma, `keys-${randomUUID().slice(0, 8)}`, opts);
    } finally {
      await prisma.$disconnect();
    }
  };

  beforeAll(async () => {
    const env = { AUTH_CACHE_TTL: CACHE_TTL };
    a = await startApiProcess(env);
    b = await startApiProcess(env);
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.end();
  });

  it('a key revoked through the CLI is refused by both processes long before the cache TTL', async () => {
    const key = await newKey();
    // Both processes resolve and cache the key.
    expect(await status(a.baseUrl, key.apiKey)).toBe(200);
    expect(await status(b.baseUrl, key.apiKey)).toBe(200);
    expect(await status(b.baseUrl, key.apiKey)).toBe(200);

    const revoked = await cli('revoke', '--key', key.prefix, '--reason-note', 'e2e');
    expect(revoked).toMatchObject({ code: 0, out: expect.stringMatching(/^revoked /) });
    // Within DEADLINE_MS (10 s), far below the 60 s TTL: only the NOTIFY can have cleared the caches.
    await waitForStatus(() => status(b.baseUrl, key.apiKey), 401, DEADLINE_MS);
    await waitForStatus(() => status(a.baseUrl, key.apiKey), 401, DEADLINE_MS);
    const body = JSON.parse((await get(b.baseUrl, '/v1/stats', key.apiKey)).text);
    expect(body).toMatchObject({ code: 'unauthorized', retryable: false });
  }, 60_000);

  it('rotate: both keys work on both processes until the cut-over, then only the new one', async () => {
    const old = await newKey();
    expect(await status(a.baseUrl, old.apiKey)).toBe(200);
    expect(await status(b.baseUrl, old.apiKey)).toBe(200);

    // 30 s: time for the CLI to start and for the checks below, on a loaded machine, before the cut-over.
    const r = await cli('rotate', '--key', old.keyId, '--until', '30s', '--json');
    expect(r.code).toBe(0);
    const rotated = JSON.parse(r.out) as { apiKey: string; old: { expiresAt: string } };
    const cutover = Date.parse(rotated.old.expiresAt);
    expect(r.out).not.toContain(old.apiKey);

    for (const api of [a, b]) {
      expect(await status(api.baseUrl, rotated.apiKey)).toBe(200);
      expect(await status(api.baseUrl, old.apiKey)).toBe(200);
    }
    expect(Date.now()).toBeLessThan(cutover); // the checks above ran before the cut-over

    const refusedAt = await waitForStatus(() => status(b.baseUrl, old.apiKey), 401, cutover - Date.now() + 20_000);
    expect(refusedAt).toBeGreaterThanOrEqual(cutover - 50); // not before it (50 ms: the two clocks' rounding)
    await waitForStatus(() => status(a.baseUrl, old.apiKey), 401, DEADLINE_MS);
    for (const api of [a, b]) expect(await status(api.baseUrl, rotated.apiKey)).toBe(200);
  }, 120_000);

  it('an expired key is refused, though cached for 60 s', async () => {
    const key = await newKey({ expiresAt: new Date(Date.now() + 3_000) });
    expect(await status(a.baseUrl, key.apiKey)).toBe(200);
    await waitForStatus(() => status(a.baseUrl, key.apiKey), 401, 20_000);
    expect(await status(b.baseUrl, key.apiKey)).toBe(401);
  }, 60_000);

  it('last_used_at is written when the key is used', async () => {
    const key = await newKey();
    const lastUsed = async () =>
      (await db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [key.keyId])).rows[0]
        .last_used_at as Date | null;
    expect(await lastUsed()).toBeNull();
    for (let i = 0; i < 5; i++) expect(await status(a.baseUrl, key.apiKey)).toBe(200);
    const until = Date.now() + DEADLINE_MS;
    while (!(await lastUsed()) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    // More requests within the minute, on both processes, leave it as it was.
    for (let i = 0; i < 5; i++) expect(await status(b.baseUrl, key.apiKey)).toBe(200);
    for (let i = 0; i < 5; i++) expect(await status(a.baseUrl, key.apiKey)).toBe(200);
    expect(await lastUsed()).toEqual(first);
  }, 60_000);
});
