import { Injectable } from '@nestjs/common';
import { Prisma } from '@tickets/db';
import { Database } from '../infra/database';

export interface StatsRows {
  counts: { dimension: string; value: string; count: bigint }[];
  days: { day: Date; created: bigint; cancelled: bigint }[];
}

/** Reads the statistics projection kept by the stats consumer (apps/stats-consumer) for one group. */
@Injectable()
export class StatsRepository {
  constructor(private readonly db: Database) {}

  async forTenant(groupId: string, tenantId: string): Promise<StatsRows> {
    const [counts, days] = await Promise.all([
      this.db.prisma.$queryRaw<StatsRows['counts']>(Prisma.sql`
        SELECT dimension, value, count FROM ticket_stats_counts
        WHERE group_id = ${groupId} AND tenant_id = ${tenantId}::uuid AND count <> 0`),
      this.db.prisma.$queryRaw<StatsRows['days']>(Prisma.sql`
        SELECT day, created, cancelled FROM ticket_stats_daily
        WHERE group_id = ${groupId} AND tenant_id = ${tenantId}::uuid ORDER BY day`),
    ]);
    return { counts, days };
  }
}
