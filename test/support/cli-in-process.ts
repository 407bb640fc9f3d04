// Runs one `npm run cli -- <command> ...` in-process, through the CLI's own parser and command, on a
// given database and broker: the same code path as the real command, without a child process.
import type { AppConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { runCli } from '../../apps/cli/src/cli';
import type { CliCommand } from '../../apps/cli/src/command-line';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';

export interface CliRun {
  code: number;
  out: string;
  err: string;
  /** The parsed stdout when --json was given. */
  json<T = any>(): T;
}

/** `prisma` on the test database (TEST_DATABASE_URL). */
export async function cliInProcess<A>(
  command: CliCommand<A>,
  prisma: PrismaClient,
  ...argv: string[]
): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const config = {
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: `${command.name}-it` },
    database: { url: TEST_DATABASE_URL },
    notifier: {},
  } as AppConfig;
  const code = await runCli([command.name, ...argv], [command], {
    out: (l) => out.push(l),
    err: (t) => err.push(t),
    open: async () => ({
      ctx: { prisma, config, out: (l) => out.push(l), err: (t) => err.push(t) },
      close: async () => undefined,
    }),
  });
  return { code, out: out.join('\n'), err: err.join(''), json: () => JSON.parse(out.join('\n')) };
}
