import type { PrismaClient } from '@tickets/db';
import { IdempotencyKeysRepository, type PurgeReport } from './idempotency-keys.repository';

/** Runs alone, in batches of short transactions: see `IdempotencyKeysRepository.purge`. */
export function purgeIdempotencyKeys(
  prisma: PrismaClient,
  opts: { batchSize?: number; onProgress?: (r: PurgeReport) => void; now?: Date } = {},
): Promise<PurgeReport> {
  return new IdempotencyKeysRepository(prisma).purge(opts);
}
