import { Prisma, type PrismaClient } from '@tickets/db';

export interface PurgeReport {
  responsesCleared: number;
  keysDeleted: number;
}

/**
 * Applies the two retention windows in batches: stored responses are dropped once past replay_until
 * (the key row stays, so the key still resolves to its ticket and a reuse still gets 410/422), and whole
 * rows are deleted once past expires_at. Nothing inside a live window is touched.
 */
export async function purgeIdempotencyKeys(
  prisma: PrismaClient,
  opts: { batchSize?: number; onProgress?: (r: PurgeReport) => void; now?: Date } = {},
): Promise<PurgeReport> {
  const batch = opts.batchSize ?? 1_000;
  const now = opts.now ?? new Date();
  const report: PurgeReport = { responsesCleared: 0, keysDeleted: 0 };
  for (;;) {
    const n = await prisma.$executeRaw(Prisma.sql`
      DELETE FROM idempotency_keys WHERE ctid IN (
        SELECT ctid FROM idempotency_keys WHERE expires_at <= ${now}::timestamptz LIMIT ${batch}::int)`);
    report.keysDeleted += n;
    opts.onProgress?.(report);
    if (n < batch) break;
  }
  for (;;) {
    const n = await prisma.$executeRaw(Prisma.sql`
      UPDATE idempotency_keys SET response_body = NULL WHERE ctid IN (
        SELECT ctid FROM idempotency_keys WHERE replay_until <= ${now}::timestamptz AND response_body IS NOT NULL LIMIT ${batch}::int)`);
    report.responsesCleared += n;
    opts.onProgress?.(report);
    if (n < batch) break;
  }
  return report;
}
