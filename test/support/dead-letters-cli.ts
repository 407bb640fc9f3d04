// Runs `npm run cli -- dead-letters ...` in-process (see cli-in-process.ts).
import type { PrismaClient } from '@tickets/db';
import { deadLettersCli } from '../../apps/cli/src/dead-letters.command';
import { cliInProcess, type CliRun } from './cli-in-process';

/** `prisma` on the test database (TEST_DATABASE_URL), where the consumer kind's kit tables are read too. */
export function deadLettersCommand(prisma: PrismaClient, ...argv: string[]): Promise<CliRun> {
  return cliInProcess(deadLettersCli, prisma, ...argv);
}
