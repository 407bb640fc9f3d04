import { loadConfigOrExit, type AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { purgeIdempotencyKeys } from '@tickets/idempotency';
import { createApiKey } from '@tickets/tenants';
import { quietKafkajsTimeoutWarning } from '@tickets/telemetry';
import { apiKeysCli } from './api-keys.command';
import { runCli } from './cli';
import type { CliContext } from './command-line';
import { deadLettersCli } from './dead-letters.command';
import { purgeCli } from './purge.command';
import { reconcileCli } from './reconcile.command';
import { replayCli } from './replay.command';
import { webhooksCli } from './webhooks.command';

quietKafkajsTimeoutWarning();

// `npm run cli -- <command> [options]`; `npm run cli -- --help` lists the commands.
const commands = [
  apiKeysCli((prisma, tenantSlug) => createApiKey(prisma, tenantSlug)),
  purgeCli((prisma, onProgress) => purgeIdempotencyKeys(prisma, { onProgress })),
  reconcileCli,
  webhooksCli,
  replayCli,
  deadLettersCli,
];

async function open(): Promise<{ ctx: CliContext; close(): Promise<void> }> {
  const config: AppConfig = loadConfigOrExit('cli');
  const prisma: PrismaClient = createPrismaClient(config.database.url, 2, 'tickets-cli');
  const ctx: CliContext = { prisma, config, out: (line) => process.stdout.write(`${line}\n`), err: (text) => process.stderr.write(text) };
  return { ctx, close: () => prisma.$disconnect() };
}

void runCli(process.argv.slice(2), commands, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (text) => process.stderr.write(text),
  open,
}).then((code) => {
  process.exitCode = code;
});
