import type { PrismaClient } from '@tickets/db';
import type {
  Actor,
  ApiKeyRow,
  CreateApiKeyOptions,
  CreatedApiKey,
  RevokeOutcome,
  RotateOutcome,
} from '@tickets/tenants';
import { osUser } from './actor';
import { ambiguousMessage, keyJson, keyLine, notFoundMessage, parseFutureTime } from './api-keys.format';
import { UsageProblem, type CliCommand, type Values } from './command-line';

/** The key operations of @tickets/tenants, given by main.ts (the unit spec gives fakes). */
export interface ApiKeyOps {
  create(prisma: PrismaClient, tenantSlug: string, opts: CreateApiKeyOptions): Promise<CreatedApiKey>;
  list(prisma: PrismaClient, filter: { tenantSlug?: string; all: boolean; limit: number }): Promise<ApiKeyRow[]>;
  revoke(prisma: PrismaClient, ref: string, actor: Actor): Promise<RevokeOutcome>;
  rotate(
    prisma: PrismaClient,
    ref: string,
    opts: { cutover: Date; expiresAt: Date | null; actor: Actor },
  ): Promise<RotateOutcome>;
}

type Action = 'create' | 'list' | 'revoke' | 'rotate';
const ACTIONS: Action[] = ['create', 'list', 'revoke', 'rotate'];

export interface ApiKeysArgs {
  action: Action;
  tenant?: string;
  key?: string;
  label: string | null;
  expiresAt: Date | null;
  cutover?: Date;
  replace: boolean;
  all: boolean;
  limit: number;
  json: boolean;
  note: string | null;
  /** Absent: the OS user running the command. */
  by?: string;
}

/** Which options each action takes (json goes with every one). */
const ONLY: Record<string, Action[]> = {
  tenant: ['create', 'list'],
  key: ['revoke', 'rotate'],
  label: ['create'],
  expires: ['create', 'rotate'],
  until: ['rotate'],
  replace: ['create'],
  all: ['list'],
  limit: ['list'],
  'reason-note': ['create', 'revoke', 'rotate'],
  by: ['create', 'revoke', 'rotate'],
};

function times(values: Values, action: Action): { expiresAt: Date | null; cutover?: Date } | UsageProblem {
  const now = Date.now();
  const parse = (name: string, fallback?: string): Date | UsageProblem | undefined => {
    const text = (values[name] as string | undefined) ?? fallback;
    if (text === undefined) return undefined;
    try {
      return parseFutureTime(text, now);
    } catch (e) {
      return new UsageProblem(`--${name}: ${(e as Error).message}`);
    }
  };
  const expiresAt = parse('expires') ?? null;
  const cutover = action === 'rotate' ? parse('until', '24h') : undefined;
  if (expiresAt instanceof UsageProblem) return expiresAt;
  if (cutover instanceof UsageProblem) return cutover;
  if (expiresAt && expiresAt.getTime() <= now)
    return new UsageProblem('--expires must be later than now (a key that never works is of no use)');
  if (expiresAt && cutover && expiresAt <= cutover)
    return new UsageProblem('--expires (of the new key) must be later than --until (when the old key stops)');
  return { expiresAt, ...(cutover ? { cutover } : {}) };
}

function validate(values: Values, positionals: string[]): ApiKeysArgs | UsageProblem {
  const [action, ...extra] = positionals as [Action, ...string[]];
  if (!ACTIONS.includes(action) || extra.length) {
    return new UsageProblem(
      `the action is one of create, list, revoke, rotate, e.g. ${'`'}api-keys create --tenant acme${'`'}${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
    );
  }
  const stray = Object.keys(ONLY).find((name) => values[name] !== undefined && !ONLY[name].includes(action));
  if (stray) return new UsageProblem(`--${stray} goes only with ${ONLY[stray].join(' or ')}`);
  if (action === 'create' && (typeof values.tenant !== 'string' || !values.tenant))
    return new UsageProblem('--tenant <slug> is required: the tenant the key is for');
  if ((action === 'revoke' || action === 'rotate') && (typeof values.key !== 'string' || !values.key.trim()))
    return new UsageProblem(`${action} needs --key <id|prefix>: the key's id or prefix, as \`api-keys list\` shows it`);
  const label = values.label as string | undefined;
  if (label !== undefined && !/^[\x20-\x7e]{1,100}$/.test(label))
    return new UsageProblem('--label must be 1-100 printable ASCII characters');
  let limit = 100;
  if (typeof values.limit === 'string') {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      return new UsageProblem(`--limit must be a whole number from 1 to 10000, got "${values.limit}"`);
  }
  const when = times(values, action);
  if (when instanceof UsageProblem) return when;
  const by = values.by as string | undefined;
  if (by !== undefined && !by.trim()) return new UsageProblem('--by must name someone');
  return {
    action,
    ...(typeof values.tenant === 'string' ? { tenant: values.tenant } : {}),
    ...(typeof values.key === 'string' ? { key: values.key.trim() } : {}),
    label: label ?? null,
    ...when,
    replace: values.replace === true,
    all: values.all === true,
    limit,
    json: values.json === true,
    note: (values['reason-note'] as string | undefined) ?? null,
    ...(by ? { by } : {}),
  };
}

/** `api-keys create|list|revoke|rotate`: a tenant's API keys (libs/tenants); every change is audited in api_key_actions. */
export function apiKeysCli(ops: ApiKeyOps): CliCommand<ApiKeysArgs> {
  return {
    name: 'api-keys',
    summary: "create, list, revoke or rotate a tenant's API keys (a new key is shown once)",
    usage: [
      'api-keys create --tenant <slug> [--label <name>] [--expires <time|duration>] [--replace] [--reason-note "<why>"] [--by <who>] [--json]',
      'api-keys list [--tenant <slug>] [--all] [--limit 100] [--json]',
      'api-keys revoke --key <id|prefix> [--reason-note "<why>"] [--by <who>] [--json]',
      'api-keys rotate --key <id|prefix> [--until <time|duration>] [--expires <time|duration>] [--reason-note "<why>"] [--by <who>] [--json]',
    ],
    details: [
      'Only a hash of a key is stored: copy a new key from the output, it cannot be shown again. list shows each',
      "key's id and prefix (its first 11 characters; 7 for keys made before labels existed), never the key; revoke and",
      'rotate take either (or the whole key, if you hold it). A prefix shared by several keys is refused: use the id.',
      "revoke: refused by every API process within moments (each clears its key cache on the commit's notification;",
      'AUTH_CACHE_TTL bounds it if a process had lost its listening connection). Revoking twice does it once.',
      'rotate: a new key for the same tenant and label; the old one keeps working until --until (default 24h from now),',
      'then is refused (its expiry). Deploy the new key before then: both work meanwhile.',
      'Times: an ISO-8601 time (2026-12-31T08:00:00Z) or a duration from now (0, 30m, 24h, 7d).',
      'last-used is written at most once a minute per key, so it lags by up to a minute.',
      'Every create, revoke and rotate is recorded in api_key_actions (who, when, why, what).',
      'Exit codes: 0 done (or already revoked), 1 no such key, several keys match, or the key no longer works, 2 wrong usage.',
    ],
    positionals: [
      { name: 'create', description: 'a new key (and the tenant, if it is new)' },
      { name: 'list', description: 'the keys that work now (with --all: also revoked and expired ones)' },
      { name: 'revoke', description: 'refuse the key from now on' },
      { name: 'rotate', description: 'a new key; the old one works until --until' },
    ],
    options: {
      tenant: {
        type: 'string',
        value: '<slug>',
        description: "the tenant's slug, e.g. acme (required for create; list: only its keys)",
        default: 'every tenant',
      },
      key: { type: 'string', value: '<id|prefix>', description: 'the key to revoke or rotate', default: 'none' },
      label: {
        type: 'string',
        value: '<name>',
        description: 'what the key is for, e.g. billing-agent',
        default: 'none',
      },
      expires: {
        type: 'string',
        value: '<time|duration>',
        description: 'the new key is refused from then on',
        default: 'never',
      },
      until: {
        type: 'string',
        value: '<time|duration>',
        description: 'with rotate: the cut-over, when the old key stops working (0: at once)',
        default: '24h',
      },
      replace: {
        type: 'boolean',
        description: "with create: also revoke the tenant's other keys with the same --label (npm start does)",
        default: 'off',
      },
      all: { type: 'boolean', description: 'with list: also revoked and expired keys', default: 'off' },
      limit: { type: 'string', value: '<n>', description: 'with list: at most this many (1-10000)', default: '100' },
      'reason-note': { type: 'string', value: '<why>', description: 'why, recorded in the audit row', default: 'none' },
      by: { type: 'string', value: '<who>', description: 'who, recorded in the audit row', default: 'the OS user' },
      json: { type: 'boolean', description: 'print JSON, for scripts', default: 'off' },
    },
    validate,
    async run(args, { prisma, out, err }) {
      const actor: Actor = { by: args.by ?? osUser(), note: args.note };
      const print = (json: object, text: string) => out(args.json ? JSON.stringify(json) : text);
      if (args.action === 'list') {
        const items = await ops.list(prisma, { tenantSlug: args.tenant, all: args.all, limit: args.limit });
        if (args.json) out(JSON.stringify({ items: items.map(keyJson) }));
        else if (!items.length)
          out(`api-keys: none${args.all ? '' : ' that work now (--all shows revoked and expired ones)'}`);
        else for (const k of items) out(keyLine(k));
        return 0;
      }
      if (args.action === 'create') {
        const c = await ops.create(prisma, args.tenant!, {
          label: args.label,
          expiresAt: args.expiresAt,
          actor,
          replace: args.replace,
        });
        const revoked = c.revoked.map((k) => ({ id: k.id, prefix: k.prefix }));
        print(
          { tenant: c.tenant, apiKey: c.apiKey, keyId: c.keyId, prefix: c.prefix, expiresAt: args.expiresAt, revoked },
          [
            `tenant ${c.tenant} (${c.tenantId})`,
            `api key ${c.apiKey}`,
            `(store it now: only its hash is kept; it is listed as ${c.prefix}, id ${c.keyId})`,
            ...revoked.map((k) => `revoked the earlier key ${k.prefix} (${k.id}), same label`),
          ].join('\n'),
        );
        return 0;
      }
      const r =
        args.action === 'revoke'
          ? await ops.revoke(prisma, args.key!, actor)
          : await ops.rotate(prisma, args.key!, { cutover: args.cutover!, expiresAt: args.expiresAt, actor });
      if (r.outcome === 'not-found' || r.outcome === 'ambiguous') {
        const text = r.outcome === 'ambiguous' ? ambiguousMessage(args.key!, r.candidates) : notFoundMessage(args.key!);
        if (args.json)
          out(
            JSON.stringify({
              outcome: r.outcome,
              candidates: r.outcome === 'ambiguous' ? r.candidates.map(keyJson) : [],
            }),
          );
        err(`${text}\n`);
        return 1;
      }
      if (r.outcome === 'not-active') {
        print(
          { outcome: r.outcome, key: keyJson(r.key) },
          `api-keys: not rotated: the key no longer works (${keyLine(r.key)}); create a new one`,
        );
        return 1;
      }
      if (r.outcome === 'rotated') {
        print(
          { outcome: r.outcome, apiKey: r.apiKey, keyId: r.newKeyId, prefix: r.prefix, old: keyJson(r.old) },
          [
            `api key ${r.apiKey}`,
            `(store it now: only its hash is kept; it is listed as ${r.prefix}, id ${r.newKeyId})`,
            `the old key ${r.old.prefix} (${r.old.id}) works until ${r.old.expiresAt!.toISOString()}, then is refused`,
          ].join('\n'),
        );
        return 0;
      }
      print(
        { outcome: r.outcome, key: keyJson(r.key) },
        r.outcome === 'revoked'
          ? `revoked ${r.key.prefix} (${r.key.id}) of tenant ${r.key.tenantSlug}`
          : `already revoked at ${r.key.revokedAt?.toISOString()}: ${r.key.prefix} (${r.key.id}); nothing done`,
      );
      return 0;
    },
  };
}
