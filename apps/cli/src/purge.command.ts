import type { PrismaClient } from '@tickets/db';
import type { CliCommand } from './command-line';

interface PurgeProgress {
  keysDeleted: number;
  responsesCleared: number;
}

export type PurgeKeys = (prisma: PrismaClient, onProgress: (p: PurgeProgress) => void) => Promise<PurgeProgress>;

/** `purge`: the idempotency retention windows applied now, with progress on stderr and the totals as JSON. */
export function purgeCli(purge: PurgeKeys): CliCommand<Record<string, never>> {
  return {
    name: 'purge',
    summary: 'apply the idempotency retention windows now (shows progress)',
    usage: ['purge'],
    details: [
      'Deletes keys past IDEMPOTENCY_KEY_RETENTION and clears stored responses past IDEMPOTENCY_REPLAY_WINDOW, in',
      'batches; nothing inside a live window is touched. The API does the same every IDEMPOTENCY_PURGE_INTERVAL.',
      'Prints {"responsesCleared","keysDeleted"} as JSON.',
    ],
    options: {},
    validate: () => ({}),
    async run(_args, { prisma, out, err }) {
      const r = await purge(prisma, (p) =>
        err(`\rpurge: ${p.keysDeleted} expired keys deleted, ${p.responsesCleared} stored responses cleared`),
      );
      err('\n');
      out(JSON.stringify(r));
      return 0;
    },
  };
}
