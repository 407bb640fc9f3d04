import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { PrismaClient } from '@tickets/db';
import { MigrationsRepository } from './migrations.repository';

/** prisma/migrations of the checkout this file runs from (dist/... or the sources), found by walking up. */
function migrationsDir(from = __dirname): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'prisma', 'migrations');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Names of the migrations in prisma/migrations that the database has not applied. Lets a process
 * refuse to start against an unmigrated database with a clear message instead of failing on the
 * first query that touches a missing table. Any other database error (unreachable, no permission)
 * is thrown, for the caller to report as such.
 */
export async function pendingMigrations(prisma: PrismaClient, dir = migrationsDir()): Promise<string[]> {
  if (!dir) return [];
  const wanted = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
  const applied = (await new MigrationsRepository(prisma).applied()) ?? []; // no _prisma_migrations table: nothing applied
  return wanted.filter((m) => !applied.includes(m)).sort();
}
