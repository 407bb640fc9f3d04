// `npm run cli -- api-keys create|list|revoke|rotate` against the real database: what list shows (never
// the key), how a key is named (id, prefix, whole key; an ambiguous prefix refused), the audit rows, the
// --replace of npm start, last_used_at written at most once per interval, and the change watch (NOTIFY).
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import {
  ApiKeyChangeWatch,
  ApiKeysRepository,
  createApiKey,
  hashApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
} from '@tickets/tenants';
import { apiKeysCli } from '../../apps/cli/src/api-keys.command';
import { cliInProcess } from '../support/cli-in-process';
import { TEST_DATABASE_URL } from '../support/env';

const command = apiKeysCli({ create: createApiKey, list: listApiKeys, revoke: revokeApiKey, rotate: rotateApiKey });

describe('api-keys lifecycle (CLI, real PostgreSQL)', () => {
  let prisma: PrismaClient;
  let db: Pool;
  const keys = () => new ApiKeysRepository(prisma);
  const run = (...argv: string[]) => cliInProcess(command, prisma, ...argv);
  const tenant = () => `keys-${randomUUID().slice(0, 8)}`;
  const actions = async (keyId: string) =>
    (
      await db.query(
        `SELECT action, actor, note, detail FROM api_key_actions WHERE key_id = $1 ORDER BY created_at, action`,
        [keyId],
      )
    ).rows;

  beforeAll(() => {
    prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'api-keys-it');
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await db.end();
  });

  it('create is audited; list shows id, prefix, label and times, never the key', async () => {
    const slug = tenant();
    const c = await run('create', '--tenant', slug, '--label', 'billing agent', '--by', 'ana', '--json');
    expect(c.code).toBe(0);
    const made = c.json<{ apiKey: string; keyId: string; prefix: string }>();
    expect(made.apiKey.startsWith(made.prefix)).toBe(true);
    expect(made.prefix).toHaveLength(11);
    const stored = await db.query('SELECT key_hash FROM api_keys WHERE id = $1', [made.keyId]);
    expect(stored.rows[0].key_hash).toBe(hashApiKey(made.apiKey));

    const text = await run('list', '--tenant', slug);
    const json = await run('list', '--tenant', slug, '--json');
    for (const out of [text.out, json.out]) {
      expect(out).toContain(made.prefix);
      expect(out).not.toContain(made.apiKey);
    }
    expect(text.out).toMatch(/active\s+label=billing agent\s+created=\S+\s+last-used=never\s+expires=never$/);
    expect(json.json().items).toEqual([
      expect.objectContaining({ id: made.keyId, tenant: slug, label: 'billing agent', state: 'active' }),
    ]);
    expect(await actions(made.keyId)).toEqual([
      expect.objectContaining({
        action: 'create',
        actor: 'ana',
        detail: expect.objectContaining({ label: 'billing agent' }),
      }),
    ]);
  });

  it('revoke by prefix, once: audited with who and why; list hides it unless --all', async () => {
    const slug = tenant();
    const made = (await run('create', '--tenant', slug, '--json')).json<{
      apiKey: string;
      keyId: string;
      prefix: string;
    }>();
    const r = await run('revoke', '--key', made.prefix, '--by', 'ops', '--reason-note', 'leaked in a log');
    expect(r).toMatchObject({ code: 0, out: expect.stringMatching(/^revoked tk_\S+ \(.+\) of tenant keys-/) });
    expect(await keys().findActiveByHash(hashApiKey(made.apiKey))).toBeNull();
    const again = await run('revoke', '--key', made.keyId);
    expect(again).toMatchObject({ code: 0, out: expect.stringMatching(/^already revoked at .*nothing done$/) });
    expect(await actions(made.keyId)).toEqual([
      expect.objectContaining({ action: 'create' }),
      expect.objectContaining({ action: 'revoke', actor: 'ops', note: 'leaked in a log' }),
    ]);
    expect((await run('list', '--tenant', slug, '--json')).json().items).toEqual([]);
    expect((await run('list', '--tenant', slug, '--all', '--json')).json().items).toEqual([
      expect.objectContaining({ id: made.keyId, state: 'revoked' }),
    ]);
  });

  it('names a key by its whole secret too; refuses an unknown or a shared prefix', async () => {
    const slug = tenant();
    const made = await createApiKey(prisma, slug);
    expect((await run('rotate', '--key', made.apiKey, '--until', '1h', '--json')).json().outcome).toBe('rotated');

    const missing = await run('revoke', '--key', 'tk_nothing');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no key has the id or prefix "tk_nothing"; `npm run cli -- api-keys list --all`/);

    // Two keys sharing a prefix (possible among 7-character prefixes of older keys).
    const shared = `tk_${randomUUID().slice(0, 4)}`;
    const actor = { by: 'test', note: null };
    const a = await keys().createKey(
      slug,
      { keyHash: randomUUID(), prefix: shared, label: null, expiresAt: null },
      actor,
    );
    await keys().createKey(slug, { keyHash: randomUUID(), prefix: shared, label: null, expiresAt: null }, actor);
    const amb = await run('revoke', '--key', shared);
    expect(amb.code).toBe(1);
    expect(amb.err).toMatch(/names 2 keys; name one by its id \(--key <id>\)/);
    expect((await run('revoke', '--key', a.keyId)).code).toBe(0);
  });

  it('rotate: a new key with the same label, the old one expiring at the cut-over, both audited', async () => {
    const slug = tenant();
    const old = (await run('create', '--tenant', slug, '--label', 'agents', '--json')).json<{ keyId: string }>();
    const r = await run('rotate', '--key', old.keyId, '--until', '1h', '--reason-note', 'yearly', '--json');
    expect(r.code).toBe(0);
    const rotated = r.json<{ apiKey: string; keyId: string; old: { expiresAt: string; state: string } }>();
    expect(rotated.old.state).toBe('expiring');
    expect(Math.abs(Date.parse(rotated.old.expiresAt) - (Date.now() + 3_600_000))).toBeLessThan(60_000);
    const items = (await run('list', '--tenant', slug, '--json')).json().items;
    expect(items).toHaveLength(2);
    expect(items.every((k: { label: string }) => k.label === 'agents')).toBe(true);
    expect(await actions(old.keyId)).toEqual([
      expect.objectContaining({ action: 'create' }),
      expect.objectContaining({
        action: 'rotate',
        note: 'yearly',
        detail: expect.objectContaining({ newKeyId: rotated.keyId }),
      }),
    ]);
    expect(await actions(rotated.keyId)).toEqual([
      expect.objectContaining({ action: 'create', detail: expect.objectContaining({ oldKeyId: old.keyId }) }),
    ]);
    // A revoked key cannot be rotated.
    await run('revoke', '--key', rotated.keyId);
    const refused = await run('rotate', '--key', rotated.keyId);
    expect(refused).toMatchObject({ code: 1, out: expect.stringMatching(/not rotated: the key no longer works/) });
  });

  it('create --replace revokes the earlier keys of the same label only (npm start)', async () => {
    const slug = tenant();
    const first = (await run('create', '--tenant', slug, '--label', 'npm-start', '--json')).json<{ keyId: string }>();
    const other = (await run('create', '--tenant', slug, '--label', 'other', '--json')).json<{ keyId: string }>();
    const second = await run('create', '--tenant', slug, '--label', 'npm-start', '--replace', '--json');
    expect(second.json().revoked).toEqual([{ id: first.keyId, prefix: expect.any(String) }]);
    const live = (await run('list', '--tenant', slug, '--json')).json().items.map((k: { id: string }) => k.id);
    expect(live.sort()).toEqual([other.keyId, second.json().keyId].sort());
    expect(await actions(first.keyId)).toEqual([
      expect.objectContaining({ action: 'create' }),
      expect.objectContaining({
        action: 'revoke',
        detail: expect.objectContaining({ replacedBy: second.json().keyId }),
      }),
    ]);
  });

  it('touch writes last_used_at, then not again within the interval (whichever process asks)', async () => {
    const made = await createApiKey(prisma, tenant());
    const lastUsed = async () =>
      (await db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [made.keyId])).rows[0].last_used_at;
    expect(await lastUsed()).toBeNull();
    await keys().touch(made.keyId, 60_000);
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    await keys().touch(made.keyId, 60_000);
    expect(await lastUsed()).toEqual(first);
    await keys().touch(made.keyId, 0);
    expect((await lastUsed()).getTime()).toBeGreaterThanOrEqual(first.getTime());
  });
});

describe('ApiKeyChangeWatch (real PostgreSQL)', () => {
  let prisma: PrismaClient;
  let db: Pool;
  let watch: ApiKeyChangeWatch | undefined;
  const appName = `api-key-watch-it-${randomUUID().slice(0, 8)}`;

  beforeAll(() => {
    prisma = createPrismaClient(TEST_DATABASE_URL, 1, 'api-key-watch-it');
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  });
  afterAll(async () => {
    await watch?.stop();
    await prisma.$disconnect();
    await db.end();
  });

  async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('is told of a revoke by plain SQL, not of a last_used_at write, and listens again after its connection dies', async () => {
    let changes = 0;
    const troubles: string[] = [];
    watch = new ApiKeyChangeWatch({
      databaseUrl: TEST_DATABASE_URL,
      applicationName: appName,
      onChange: () => changes++,
      onTrouble: (message) => troubles.push(message),
      retryMs: 100,
    });
    await watch.start();
    expect(changes).toBe(1); // a fresh LISTEN: whatever was cached before is unknown

    const a = await createApiKey(prisma, `watch-${randomUUID().slice(0, 8)}`);
    const b = await createApiKey(prisma, `watch-${randomUUID().slice(0, 8)}`);
    // Notifications arrive in commit order: had the last_used_at write notified, the count would jump by 2.
    await db.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [a.keyId]);
    await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [a.keyId]);
    await until('the revoke notification', () => changes === 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(changes).toBe(2);

    await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [appName]);
    await until('the drop and the new LISTEN', () => changes >= 4);
    expect(troubles[0]).toMatch(/lost its database connection; reopening in 100 ms/);
    await until('the new listening session', async () => {
      const r = await db.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [appName]);
      return r.rowCount === 1;
    });
    const before = changes;
    await db.query('UPDATE api_keys SET expires_at = now() WHERE id = $1', [b.keyId]);
    await until('the expiry notification on the new connection', () => changes === before + 1);
  });
});
