import { loadConfigOrExit, type AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { purgeIdempotencyKeys } from '@tickets/idempotency';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '@tickets/tenants';
import { guardStdio } from '@tickets/logger';
import { explainStartupFailure } from '@tickets/startup';
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
// `npm run cli -- ... | head`: a reader that leaves early must not turn into an EPIPE stack trace.
guardStdio();

// `npm run cli -- <command> [options]`; `npm run cli -- --help` lists the commands.
const commands = [
  apiKeysCli({ create: createApiKey, list: listApiKeys, revoke: revokeApiKey, rotate: rotateApiKey }),
  purgeCli((prisma, onProgress) => purgeIdempotencyKeys(prisma, { onProgress })),
  reconcileCli,
  webhooksCli,
  replayCli,
  deadLettersCli,
];

let config: AppConfig | undefined;

async function open(): Promise<{ ctx: CliContext; close(): Promise<void> }> {
  config = loadConfigOrExit('cli');
  const prisma: PrismaClient = createPrismaClient(config.database.url, 2, 'tickets-cli');
  const ctx: CliContext = {
    prisma,
    config,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (text) => process.stderr.write(text),
  };
  return { ctx, close: () => prisma.$disconnect() };
}

void runCli(process.argv.slice(2), commands, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (text) => process.stderr.write(text),
  open,
  describe: (error) => {
    const failure = explainStartupFailure(error, { databaseUrl: config?.database.url, brokers: config?.kafka.brokers });
    return failure.unexpected ? (error as Error).message : failure.message;
  },
}).then((code) => {
  process.exitCode = code;
});
