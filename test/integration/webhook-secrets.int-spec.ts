// Webhook secrets at rest: `webhooks set` stores a ciphertext (no character of the secret is in the
// table), the dispatcher decrypts it to sign, a rotated keyring (new key first, old key kept) still
// decrypts the old rows, `webhooks reencrypt` moves every row (a plaintext one from before encryption
// too) to the newest key, and production without WEBHOOK_SECRET_KEYS refuses to store a secret.
import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Pool } from 'pg';
import { loadConfig, type AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { WebhookDispatcher } from '@tickets/notifications';
import { webhooksCommand } from '../../apps/cli/src/webhooks.command';
import { TEST_DATABASE_URL } from '../support/env';
import { TEST_NOTIFIER, eventually, newWebhookSecret, ticketCreated, uniqueName } from '../support/events-factory';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const groupId = uniqueName('secrets-it');
const tenantId = randomUUID();
const legacyTenantId = randomUUID();
const slug = uniqueName('secrets-it');
const secret = newWebhookSecret();
const legacySecret = `legacy-plain-${randomBytes(8).toString('hex')}`;
const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;
const configWith = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'production', ...env });
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;

async function cli(config: AppConfig, argv: string[], stdin?: string): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await webhooksCommand(argv, {
    prisma,
    config,
    out: (l) => out.push(l),
    err: () => undefined,
    stdin: Readable.from([stdin ?? '']),
  });
  return { code, out };
}

const storedSecret = async (id: string) =>
  (await db.query<{ webhook_secret: string }>('SELECT webhook_secret FROM tenants WHERE id = $1', [id])).rows[0]
    .webhook_secret;

/** One notification of `tenant`, sent by a dispatcher with `config`'s keys; resolves with what the receiver saw. */
async function deliverWith(config: AppConfig, tenant: string) {
  const event = ticketCreated(tenant);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, next_attempt_at, payload)
     VALUES ($1, $2, $3, $4, $5, $6, 'tenant', now(), $7) RETURNING id`,
    [groupId, tenant, event.id, event.ticketId, event.type, receiver.url, JSON.stringify(event)],
  );
  const d = new WebhookDispatcher({
    prisma,
    groupId,
    ...TEST_NOTIFIER,
    maxAttempts: 1,
    secretKeys: config.notifier.secretKeys.keys,
  });
  d.start();
  try {
    const row = await eventually(
      async () => (await db.query('SELECT status, last_error FROM notifications WHERE id = $1', [rows[0].id])).rows[0],
      (r) => r.status !== 'pending',
      20_000,
      'the notification sent or dead',
    );
    return { row, requests: receiver.requests.filter((r) => r.id === rows[0].id) };
  } finally {
    await d.stop();
  }
}

beforeAll(async () => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'secrets-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, slug]);
  // A row from before encryption: the secret in plaintext.
  await db.query('INSERT INTO tenants (id, slug, webhook_url, webhook_secret) VALUES ($1, $2, $3, $4)', [
    legacyTenantId,
    `${slug}-legacy`,
    receiver.url,
    legacySecret,
  ]);
});

afterAll(async () => {
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM tenants WHERE id = ANY($1)', [[tenantId, legacyTenantId]]);
  await Promise.allSettled([prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('production without WEBHOOK_SECRET_KEYS refuses to store a secret, naming the variable', async () => {
  const refused = await cli(
    configWith({}),
    ['set', '--tenant', slug, '--url', receiver.url, '--secret-file', '-'],
    secret,
  );
  expect(refused).toEqual({ code: 1, out: [expect.stringMatching(/nothing stored: WEBHOOK_SECRET_KEYS is not set/)] });
  expect(await storedSecret(tenantId)).toBeNull();
});

it('a stored secret is not readable in the table; after a rotation the old key still decrypts it, and reencrypt moves it to the new key', async () => {
  const before = configWith({ WEBHOOK_SECRET_KEYS: k1 });
  const set = await cli(before, ['set', '--tenant', slug, '--url', receiver.url, '--secret-file', '-'], `${secret}\n`);
  expect(set.code).toBe(0);
  const stored = await storedSecret(tenantId);
  expect(stored).toMatch(/^enc:v1:k1:/);
  expect(stored).not.toContain(secret);
  expect(stored).not.toContain(secret.slice(6, 20));
  expect(Buffer.from(stored.split(':')[3], 'base64').toString('latin1')).not.toContain(secret.slice(6, 20));
  expect((await deliverWith(before, tenantId)).requests).toEqual([expect.objectContaining({ verified: true })]);

  // Rotation: k2 is the newest, k1 stays for what it encrypted.
  const rotated = configWith({ WEBHOOK_SECRET_KEYS: `${k2},${k1}` });
  expect((await cli(rotated, ['show', '--tenant', slug])).out[0]).toContain(
    `(secret whsec_**** (${secret.length} chars), encrypted with key k1)`,
  );
  expect((await deliverWith(rotated, tenantId)).requests).toEqual([expect.objectContaining({ verified: true })]);

  // One tenant at a time here: other tests' tenants share this database.
  for (const t of [slug, `${slug}-legacy`])
    expect(await cli(rotated, ['reencrypt', '--tenant', t])).toEqual({
      code: 0,
      out: ['webhooks reencrypt: 1 secret(s) re-encrypted with the newest key, 0 already were'],
    });
  expect((await cli(rotated, ['reencrypt', '--tenant', slug])).out).toEqual([
    'webhooks reencrypt: 0 secret(s) re-encrypted with the newest key, 1 already were',
  ]);
  expect(await storedSecret(tenantId)).toMatch(/^enc:v1:k2:/);
  expect(await storedSecret(legacyTenantId)).toMatch(/^enc:v1:k2:/);
  expect(await storedSecret(legacyTenantId)).not.toContain(legacySecret);

  // k1 retired: everything is under k2 now.
  const onlyK2 = configWith({ WEBHOOK_SECRET_KEYS: k2 });
  expect((await deliverWith(onlyK2, tenantId)).requests).toEqual([expect.objectContaining({ verified: true })]);
  expect((await cli(onlyK2, ['show', '--tenant', `${slug}-legacy`])).out[0]).toContain(
    `(${legacySecret.length} chars), encrypted with key k2`,
  );
});

it('a key missing from the keyring: the attempt fails naming the key and the variable, and nothing is sent', async () => {
  const k3 = configWith({ WEBHOOK_SECRET_KEYS: `k3:${randomBytes(32).toString('base64')}` });
  const { row, requests } = await deliverWith(k3, tenantId);
  expect(requests).toEqual([]);
  expect(row).toEqual({
    status: 'dead',
    last_error: expect.stringMatching(/encrypted with key "k2", which is not in WEBHOOK_SECRET_KEYS \(keys: k3\)/),
  });
  const shown = await cli(k3, ['show', '--tenant', slug]);
  expect(shown.code).toBe(1);
  expect(shown.out[0]).toMatch(/cannot be decrypted: .*key "k2"/);
});
