import { loadConfigOrExit, type AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { purgeIdempotencyKeys } from '@tickets/idempotency';
import { flag } from './flags';
import { RECONCILE_USAGE, reconcileCommand } from './reconcile.command';
import { WEBHOOKS_USAGE, webhooksCommand } from './webhooks.command';

type Command = (argv: string[], deps: { prisma: PrismaClient; out: (line: string) => void; config: AppConfig }) => Promise<number>;

const USAGE = `usage: npm run --silent cli -- <command>
  api-keys create --tenant <slug> [--json]   create the tenant if needed and a new API key (shown once)
  purge                                      apply the idempotency retention windows now (shows progress)
${RECONCILE_USAGE}
${WEBHOOKS_USAGE.split('\n').slice(1).join('\n')}`;

const commands: Record<string, Command> = {
  'api-keys': async (argv, { prisma, out }) => {
    const tenant = flag(argv, 'tenant');
    if (argv[0] !== 'create' || !tenant) {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    const created = await createApiKey(prisma, tenant);
    if (argv.includes('--json')) out(JSON.stringify({ tenant: created.tenant, apiKey: created.apiKey }));
    else out(`tenant ${created.tenant} (${created.tenantId})\napi key ${created.apiKey}\n(store it now: only its hash is kept)`);
    return 0;
  },
  purge: async (_argv, { prisma, out }) => {
    const r = await purgeIdempotencyKeys(prisma, {
      onProgress: (p) => process.stderr.write(`\rpurge: ${p.keysDeleted} expired keys deleted, ${p.responsesCleared} stored responses cleared`),
    });
    process.stderr.write('\n');
    out(JSON.stringify(r));
    return 0;
  },
};

commands.webhooks = webhooksCommand;
commands.reconcile = (argv, deps) => reconcileCommand(argv, { ...deps, defaultGroup: deps.config.notifier.groupId });

async function main(): Promise<void> {
  const [name, ...argv] = process.argv.slice(2);
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  const config = loadConfigOrExit('cli');
  const prisma = createPrismaClient(config.database.url, 2, 'tickets-cli');
  try {
    process.exitCode = await command(argv, { prisma, config, out: (line) => process.stdout.write(`${line}\n`) });
  } catch (e) {
    process.stderr.write(`cli: ${(e as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await prisma.$disconnect();
  }
}

void main();
