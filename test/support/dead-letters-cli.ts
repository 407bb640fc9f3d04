// Runs `npm run cli -- dead-letters ...` in-process, through the CLI's own parser and command, on a
// given database and broker: the same code path as the real command, without a child process.
import type { AppConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { runCli } from '../../apps/cli/src/cli';
import { deadLettersCli } from '../../apps/cli/src/dead-letters.command';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';

export interface CliRun {
  code: number;
  out: string;
  err: string;
  /** The parsed stdout when --json was given. */
  json<T = any>(): T;
}

/** `prisma` on the test database (TEST_DATABASE_URL), where the consumer kind's kit tables are read too. */
export async function deadLettersCommand(prisma: PrismaClient, ...argv: string[]): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const config = {
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'dead-letters-it' },
    database: { url: TEST_DATABASE_URL },
    notifier: {},
  } as AppConfig;
  const code = await runCli(['dead-letters', ...argv], [deadLettersCli], {
    out: (l) => out.push(l),
    err: (t) => err.push(t),
    open: async () => ({
      ctx: { prisma, config, out: (l) => out.push(l), err: (t) => err.push(t) },
      close: async () => undefined,
    }),
  });
  return { code, out: out.join('\n'), err: err.join(''), json: () => JSON.parse(out.join('\n')) };
}
