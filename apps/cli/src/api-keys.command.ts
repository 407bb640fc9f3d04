import type { PrismaClient } from '@tickets/db';
import { UsageProblem, type CliCommand } from './command-line';

export type CreateApiKey = (
  prisma: PrismaClient,
  tenantSlug: string,
) => Promise<{ tenant: string; tenantId: string; apiKey: string }>;

interface ApiKeysArgs {
  tenant: string;
  json: boolean;
}

/** `api-keys create --tenant <slug> [--json]`; `create` makes the tenant if it is new and a key for it. */
export function apiKeysCli(create: CreateApiKey): CliCommand<ApiKeysArgs> {
  return {
    name: 'api-keys',
    summary: "create a tenant's API key (the tenant too, if it is new); the key is shown once",
    usage: ['api-keys create --tenant <slug> [--json]'],
    details: ['Only a hash of the key is stored: copy it from the output, it cannot be shown again.'],
    positionals: [{ name: 'create', description: 'the action (the only one for now)' }],
    options: {
      tenant: { type: 'string', value: '<slug>', description: "the tenant's slug, e.g. acme", required: true },
      json: { type: 'boolean', description: 'print {"tenant","apiKey"} as JSON, for scripts', default: 'off' },
    },
    validate(values, positionals) {
      if (positionals[0] !== 'create' || positionals.length > 1) {
        return new UsageProblem(
          `the action is "create", e.g. ${'`'}api-keys create --tenant acme${'`'}${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
        );
      }
      if (typeof values.tenant !== 'string' || !values.tenant)
        return new UsageProblem('--tenant <slug> is required: the tenant the key is for');
      return { tenant: values.tenant, json: values.json === true };
    },
    async run(args, { prisma, out }) {
      const created = await create(prisma, args.tenant);
      if (args.json) out(JSON.stringify({ tenant: created.tenant, apiKey: created.apiKey }));
      else
        out(
          `tenant ${created.tenant} (${created.tenantId})\napi key ${created.apiKey}\n(store it now: only its hash is kept)`,
        );
      return 0;
    },
  };
}
