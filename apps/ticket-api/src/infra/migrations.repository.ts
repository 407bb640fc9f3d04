import { sqlState, type PrismaClient } from '@tickets/db';

/** Prisma's _prisma_migrations table, read only. */
export class MigrationsRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Runs alone: names of the finished migrations, or null when the table does not exist (nothing applied). */
  async applied(): Promise<string[] | null> {
    try {
      const rows = await this.prisma.$queryRaw<Array<{ migration_name: string }>>`
        SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
      return rows.map((r) => r.migration_name);
    } catch (err) {
      if (sqlState(err) === '42P01') return null;
      throw err;
    }
  }
}
