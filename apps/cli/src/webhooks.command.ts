import type { PrismaClient } from '@tickets/db';
import { signingKey } from '@tickets/notifications';

export const WEBHOOKS_USAGE = `usage: npm run --silent cli -- webhooks <set|show|clear> --tenant <slug> [options]
  webhooks set --tenant <slug> --url <https://...> --secret <whsec_base64 | text>
      deliver this tenant's notifications to <url>, signed with <secret> (Standard Webhooks;
      a whsec_ secret is base64-decoded, any other secret is used as its UTF-8 bytes)
  webhooks show --tenant <slug>     print the tenant's webhook target (secret masked)
  webhooks clear --tenant <slug>    back to NOTIFY_WEBHOOK_URL / NOTIFY_WEBHOOK_SECRET`;

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  const v = i >= 0 ? argv[i + 1] : undefined;
  return v === undefined || v.startsWith('--') ? undefined : v;
}

const mask = (secret: string | null) => (secret ? `${secret.startsWith('whsec_') ? 'whsec_' : ''}**** (${secret.length} chars)` : '(none)');

function urlProblem(url: string): string | undefined {
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) ? undefined : `--url must be an http(s) URL, got ${u.protocol}`;
  } catch {
    return `--url is not a URL: ${url}`;
  }
}

function secretProblem(secret: string): string | undefined {
  if (secret.length < 16) return '--secret must be at least 16 characters';
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice(6);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return '--secret starts with whsec_ but the rest is not base64';
    if (signingKey(secret).length < 16) return '--secret: the base64 part of a whsec_ secret must decode to at least 16 bytes';
  }
  return undefined;
}

/**
 * `webhooks set|show|clear --tenant <slug>`: the per-tenant override of NOTIFY_WEBHOOK_URL/SECRET.
 * A notification takes its target when its event is consumed; the secret is read at each delivery.
 * Returns the exit code (0 ok, 1 unknown tenant, 2 usage).
 */
export async function webhooksCommand(argv: string[], deps: { prisma: PrismaClient; out: (line: string) => void }): Promise<number> {
  const { prisma, out } = deps;
  const [action] = argv;
  const slug = flag(argv, 'tenant');
  if (!slug || !['set', 'show', 'clear'].includes(action)) {
    out(WEBHOOKS_USAGE);
    return 2;
  }
  const tenant = await prisma.tenant.findUnique({ where: { slug } });
  if (!tenant) {
    out(`webhooks: no tenant with slug "${slug}" (create it with: npm run cli -- api-keys create --tenant ${slug})`);
    return 1;
  }
  if (action === 'show') {
    out(tenant.webhookUrl ? `tenant ${slug}: ${tenant.webhookUrl} (secret ${mask(tenant.webhookSecret)})` : `tenant ${slug}: no override (NOTIFY_WEBHOOK_URL is used)`);
    return 0;
  }
  if (action === 'clear') {
    await prisma.tenant.update({ where: { id: tenant.id }, data: { webhookUrl: null, webhookSecret: null } });
    out(`tenant ${slug}: webhook override cleared (NOTIFY_WEBHOOK_URL is used)`);
    return 0;
  }
  const url = flag(argv, 'url');
  const secret = flag(argv, 'secret');
  if (!url || !secret) {
    out(`webhooks set needs both --url and --secret\n${WEBHOOKS_USAGE}`);
    return 2;
  }
  const problem = urlProblem(url) ?? secretProblem(secret);
  if (problem) {
    out(`webhooks: ${problem}`);
    return 2;
  }
  await prisma.tenant.update({ where: { id: tenant.id }, data: { webhookUrl: url, webhookSecret: secret } });
  out(`tenant ${slug}: notifications of new events go to ${url} (secret ${mask(secret)})`);
  return 0;
}
