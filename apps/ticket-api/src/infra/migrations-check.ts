import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PrismaClient } from '@tickets/db';

/**
 * Names of the migrations in prisma/migrations that the database has not applied. Lets a process
 * refuse to start against an unmigrated database with a clear message instead of failing on the
 * first query that touches a missing table.
 */
export async function pendingMigrations(prisma: PrismaClient, root = join(__dirname, '..', '..', '..', '..', '..')): Promise<string[]> {
  const dir = join(root, 'prisma', 'migrations');
  if (!existsSync(dir)) return [];
  const wanted = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  let applied: string[] = [];
  try {
    const rows = await prisma.$queryRaw<Array<{ migration_name: string }>>`
      SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
    applied = rows.map((r) => r.migration_name);
  } catch {
    return wanted; // no _prisma_migrations table: nothing applied
  }
  return wanted.filter((m) => !applied.includes(m)).sort();
}
