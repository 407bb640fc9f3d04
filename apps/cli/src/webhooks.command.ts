import { maskSecret, secretProblem, urlProblem, WebhookTargetsRepository } from '@tickets/webhook-targets';
import { CLI, parseCommandLine, commandHelp, UsageProblem, type CliCommand, type CliContext } from './command-line';

type WebhooksArgs =
  { action: 'show' | 'clear'; tenant: string } | { action: 'set'; tenant: string; url: string; secret: string };

const ACTIONS = ['set', 'show', 'clear'];

/**
 * `webhooks set|show|clear --tenant <slug>`: the per-tenant override of NOTIFY_WEBHOOK_URL/SECRET.
 * A notification takes its target when its event is consumed; the secret is read at each delivery.
 * Exit codes: 0 ok, 1 unknown tenant, 2 usage.
 */
export const webhooksCli: CliCommand<WebhooksArgs> = {
  name: 'webhooks',
  summary: "set, show or clear a tenant's webhook target (overrides NOTIFY_WEBHOOK_URL / NOTIFY_WEBHOOK_SECRET)",
  usage: [
    'webhooks set --tenant <slug> --url <https://...> --secret <whsec_base64 | text>',
    'webhooks show --tenant <slug>',
    'webhooks clear --tenant <slug>',
  ],
  details: [
    'Notifications are signed with the secret (Standard Webhooks): a whsec_ secret is base64-decoded, any',
    'other secret is used as its UTF-8 bytes. A notification takes its target when its event is consumed.',
  ],
  positionals: [
    { name: 'set', description: "deliver this tenant's notifications to --url, signed with --secret" },
    { name: 'show', description: "print the tenant's webhook target (secret masked)" },
    { name: 'clear', description: 'back to NOTIFY_WEBHOOK_URL / NOTIFY_WEBHOOK_SECRET' },
  ],
  options: {
    tenant: { type: 'string', value: '<slug>', description: "the tenant's slug", required: true },
    url: {
      type: 'string',
      value: '<url>',
      description: 'with set: the http(s) URL notifications are POSTed to',
      default: 'none',
    },
    secret: {
      type: 'string',
      value: '<secret>',
      description: 'with set: the signing secret, whsec_<base64> or text of 16+ characters',
      default: 'none',
    },
  },
  validate(values, positionals) {
    const [action, ...extra] = positionals;
    if (!ACTIONS.includes(action) || extra.length) {
      return new UsageProblem(
        `the action is one of set, show, clear${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
      );
    }
    const tenant = values.tenant as string | undefined;
    if (!tenant) return new UsageProblem(`--tenant <slug> is required: whose webhook to ${action}`);
    if (action !== 'set') {
      const stray = values.url !== undefined ? '--url' : values.secret !== undefined ? '--secret' : undefined;
      return stray ? new UsageProblem(`${stray} goes only with set`) : { action: action as 'show' | 'clear', tenant };
    }
    const url = values.url as string | undefined;
    const secret = values.secret as string | undefined;
    if (!url || !secret)
      return new UsageProblem(`webhooks set needs both --url and --secret (missing ${!url ? '--url' : '--secret'})`);
    const badUrl = urlProblem(url);
    if (badUrl) return new UsageProblem(`--url ${badUrl}`);
    const badSecret = secretProblem(secret);
    if (badSecret) return new UsageProblem(`--secret ${badSecret}`);
    return { action: 'set', tenant, url, secret };
  },
  async run(args, { prisma, out }: Pick<CliContext, 'prisma' | 'out'>) {
    const repo = new WebhookTargetsRepository(prisma);
    const target = await repo.find(args.tenant);
    if (!target) {
      out(
        `webhooks: no tenant with slug "${args.tenant}" (create it with: ${CLI} api-keys create --tenant ${args.tenant})`,
      );
      return 1;
    }
    const slug = target.slug;
    if (args.action === 'set') {
      await repo.set(target.tenantId, args.url, args.secret);
      out(`tenant ${slug}: notifications of new events go to ${args.url} (secret ${maskSecret(args.secret)})`);
    } else if (args.action === 'clear') {
      await repo.set(target.tenantId, null, null);
      out(`tenant ${slug}: webhook override cleared (NOTIFY_WEBHOOK_URL is used)`);
    } else {
      out(
        target.url
          ? `tenant ${slug}: ${target.url} (secret ${maskSecret(target.secret)})`
          : `tenant ${slug}: no override (NOTIFY_WEBHOOK_URL is used)`,
      );
    }
    return 0;
  },
};

/** The webhooks command called directly (tests and scripts): parse, then run; usage problems exit 2. */
export async function webhooksCommand(argv: string[], deps: Pick<CliContext, 'prisma' | 'out'>): Promise<number> {
  const parsed = parseCommandLine(webhooksCli, argv);
  if (parsed.kind === 'help') deps.out(commandHelp(webhooksCli));
  if (parsed.kind === 'usage') deps.out(parsed.message);
  return parsed.kind === 'args' ? webhooksCli.run(parsed.args, deps as CliContext) : parsed.kind === 'help' ? 0 : 2;
}
