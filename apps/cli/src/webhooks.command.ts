import { text as readText } from 'node:stream/consumers';
import { readFile } from 'node:fs/promises';
import { configDefaults } from '@tickets/config';
import {
  maskSecret,
  SecretKeyError,
  secretProblem,
  urlProblem,
  WebhookTargetsRepository,
} from '@tickets/webhook-targets';
import {
  CLI,
  commandHelp,
  parseCommandLine,
  usageMessage,
  UsageProblem,
  type CliCommand,
  type CliContext,
} from './command-line';

type WebhooksArgs =
  | { action: 'show' | 'clear'; tenant: string }
  | { action: 'set'; tenant: string; url: string; secretFile: string }
  | { action: 'reencrypt'; tenant?: string };

/** What the command needs: stdin is where `--secret-file -` reads from (process.stdin by default). */
export type WebhooksContext = Pick<CliContext, 'prisma' | 'out'> &
  Partial<Pick<CliContext, 'config' | 'err'>> & {
    stdin?: NodeJS.ReadableStream;
  };

const ACTIONS = ['set', 'show', 'clear', 'reencrypt'];
const NO_SECRET_ON_COMMAND_LINE =
  'a secret on the command line shows in the process list and the shell history: put it in a file (--secret-file <path>) or pipe it (--secret-file -)';

/**
 * `webhooks set|show|clear --tenant <slug>`: the per-tenant override of NOTIFY_WEBHOOK_URL/SECRET;
 * `webhooks reencrypt`: every stored secret under the newest WEBHOOK_SECRET_KEYS key.
 * Pending notifications, retries and requeues go to the tenant's current target, signed with its current secret.
 * Exit codes: 0 ok, 1 unknown tenant or a secret that could not be stored or re-encrypted, 2 usage.
 */
export const webhooksCli: CliCommand<WebhooksArgs> = {
  name: 'webhooks',
  summary: "set, show or clear a tenant's webhook target (overrides NOTIFY_WEBHOOK_URL / NOTIFY_WEBHOOK_SECRET)",
  usage: [
    'webhooks set --tenant <slug> --url <https://...> --secret-file <path | ->',
    'webhooks show --tenant <slug>',
    'webhooks clear --tenant <slug>',
    'webhooks reencrypt [--tenant <slug>]',
  ],
  details: [
    'Notifications are signed with the secret (Standard Webhooks): a whsec_ secret is base64-decoded, any',
    'other secret is used as its UTF-8 bytes. The secret is read from a file or stdin (one trailing line',
    'break dropped), never from the command line, and stored encrypted with the newest WEBHOOK_SECRET_KEYS key.',
    "Every delivery, retry and requeue goes to the tenant's current URL, signed with its current secret.",
  ],
  positionals: [
    {
      name: 'set',
      description: "deliver this tenant's notifications to --url, signed with the secret of --secret-file",
    },
    { name: 'show', description: "print the tenant's webhook target (secret masked) and how the secret is stored" },
    { name: 'clear', description: 'back to NOTIFY_WEBHOOK_URL / NOTIFY_WEBHOOK_SECRET' },
    {
      name: 'reencrypt',
      description: 'encrypt every plaintext or older-key secret with the newest key (after a rotation)',
    },
  ],
  options: {
    tenant: {
      type: 'string',
      value: '<slug>',
      description: "the tenant's slug (required, except for reencrypt: there it picks one tenant)",
      default: 'reencrypt: every tenant',
    },
    url: {
      type: 'string',
      value: '<url>',
      description: 'with set: the http(s) URL notifications are POSTed to',
      default: 'none',
    },
    secret: {
      type: 'string',
      value: '<secret>',
      description: `refused: ${NO_SECRET_ON_COMMAND_LINE}`,
      default: 'none',
    },
    'secret-file': {
      type: 'string',
      value: '<path | ->',
      description:
        'with set: a file holding the signing secret (whsec_<base64> or text of 16+ characters); - reads stdin',
      default: 'none',
    },
  },
  validate(values, positionals) {
    const [action, ...extra] = positionals;
    if (!ACTIONS.includes(action) || extra.length) {
      return new UsageProblem(
        `the action is one of ${ACTIONS.join(', ')}${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
      );
    }
    if (values.secret !== undefined) return new UsageProblem(`--secret is not taken: ${NO_SECRET_ON_COMMAND_LINE}`);
    const tenant = values.tenant as string | undefined;
    // An option that goes only with set, given with another action.
    const stray =
      values.url !== undefined ? '--url' : values['secret-file'] !== undefined ? '--secret-file' : undefined;
    if (action === 'reencrypt') {
      return stray ? new UsageProblem(`${stray} goes only with set`) : { action, ...(tenant ? { tenant } : {}) };
    }
    if (!tenant) return new UsageProblem(`--tenant <slug> is required: whose webhook to ${action}`);
    if (action !== 'set') {
      return stray ? new UsageProblem(`${stray} goes only with set`) : { action: action as 'show' | 'clear', tenant };
    }
    const url = values.url as string | undefined;
    const secretFile = values['secret-file'] as string | undefined;
    if (!url || !secretFile)
      return new UsageProblem(
        `webhooks set needs both --url and --secret-file (missing ${!url ? '--url' : '--secret-file <path>, or --secret-file - to read stdin'})`,
      );
    const badUrl = urlProblem(url);
    if (badUrl) return new UsageProblem(`--url ${badUrl}`);
    return { action: 'set', tenant, url, secretFile };
  },
  run: (args, ctx) => runWebhooks(args, ctx),
};

async function runWebhooks(args: WebhooksArgs, ctx: WebhooksContext): Promise<number> {
  const { prisma, out } = ctx;
  const config = ctx.config ?? configDefaults();
  const err = ctx.err ?? ((text: string) => process.stderr.write(text));
  const repo = new WebhookTargetsRepository(prisma, config.notifier.secretKeys.keys);
  if (args.action === 'reencrypt') return reencrypt(repo, args.tenant, out, err);
  const target = await repo.find(args.tenant);
  if (!target) {
    out(
      `webhooks: no tenant with slug "${args.tenant}" (create it with: ${CLI} api-keys create --tenant ${args.tenant})`,
    );
    return 1;
  }
  const slug = target.slug;
  const fallback = config.notifier.webhookUrl
    ? `NOTIFY_WEBHOOK_URL ${config.notifier.webhookUrl} is used`
    : 'NOTIFY_WEBHOOK_URL is not set in this environment: notifications are skipped unless the consumer has it';
  if (args.action === 'set') {
    let secret: string;
    try {
      const text =
        args.secretFile === '-' ? await readText(ctx.stdin ?? process.stdin) : await readFile(args.secretFile, 'utf8');
      secret = text.replace(/\r?\n$/, '');
    } catch (e) {
      out(usageMessage('webhooks', `--secret-file ${args.secretFile} cannot be read: ${(e as Error).message}`));
      return 2;
    }
    const badSecret = secretProblem(secret);
    if (badSecret) {
      out(usageMessage('webhooks', `the secret of --secret-file ${args.secretFile} ${badSecret}`));
      return 2;
    }
    try {
      await repo.set(target.tenantId, args.url, secret);
    } catch (e) {
      if (!(e instanceof SecretKeyError)) throw e;
      out(`webhooks: tenant ${slug}: nothing stored: ${e.message}`);
      return 1;
    }
    if (config.notifier.secretKeys.development)
      err(
        'webhooks: the secret is encrypted with the built-in development key (NODE_ENV is not production and WEBHOOK_SECRET_KEYS is unset): set WEBHOOK_SECRET_KEYS for a key of your own, then run webhooks reencrypt\n',
      );
    out(`tenant ${slug}: notifications go to ${args.url} (secret ${maskSecret(secret)}), pending retries included`);
  } else if (args.action === 'clear') {
    await repo.set(target.tenantId, null, null);
    out(`tenant ${slug}: webhook override cleared (${fallback})`);
  } else if (!target.url) {
    out(`tenant ${slug}: no override (${fallback})`);
  } else {
    const stored = !target.stored
      ? 'no secret: NOTIFY_WEBHOOK_SECRET signs'
      : target.stored.kind === 'plaintext'
        ? `stored in plaintext: run ${CLI} webhooks reencrypt`
        : `encrypted with key ${target.stored.keyId}`;
    const secret = target.error ? `cannot be decrypted: ${target.error}` : `${maskSecret(target.secret)}, ${stored}`;
    out(`tenant ${slug}: ${target.url} (secret ${secret})`);
    if (target.error) return 1;
  }
  return 0;
}

async function reencrypt(
  repo: WebhookTargetsRepository,
  tenant: string | undefined,
  out: (line: string) => void,
  err: (text: string) => void,
): Promise<number> {
  const r = await repo.reencrypt(tenant, ({ done, total }) => err(`webhooks reencrypt: ${done}/${total}\n`));
  out(`webhooks reencrypt: ${r.reencrypted} secret(s) re-encrypted with the newest key, ${r.upToDate} already were`);
  for (const f of r.failed) out(`  tenant ${f.slug}: not re-encrypted: ${f.error}`);
  return r.failed.length ? 1 : 0;
}

/** The webhooks command called directly (tests and scripts): parse, then run; usage problems exit 2. */
export async function webhooksCommand(argv: string[], deps: WebhooksContext): Promise<number> {
  const parsed = parseCommandLine(webhooksCli, argv);
  if (parsed.kind === 'help') deps.out(commandHelp(webhooksCli));
  if (parsed.kind === 'usage') deps.out(parsed.message);
  return parsed.kind === 'args' ? runWebhooks(parsed.args, deps) : parsed.kind === 'help' ? 0 : 2;
}
