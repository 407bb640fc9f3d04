import { Inject, Injectable } from '@nestjs/common';
import { PRIORITIES, STATUSES } from '@tickets/contracts';
import { StatsRepository } from './stats.repository';
import { STATS_GROUP } from './stats.tokens';

export interface TicketStats {
  /** The consumer group whose projection this is (STATS_GROUP_ID). */
  source: string;
  byStatus: Record<(typeof STATUSES)[number], number>;
  byPriority: Record<(typeof PRIORITIES)[number], number>;
  /** UTC days with at least one ticket created or cancelled, oldest first. */
  perDay: { day: string; created: number; cancelled: number }[];
}

/** The caller's tenant's ticket statistics, as far as the stats consumer has read the topic (eventually consistent). */
@Injectable()
export class GetStatsUseCase {
  constructor(
    private readonly repo: StatsRepository,
    @Inject(STATS_GROUP) private readonly groupId: string,
  ) {}

  async execute(tenantId: string): Promise<TicketStats> {
    const rows = await this.repo.forTenant(this.groupId, tenantId);
    const byStatus = Object.fromEntries(STATUSES.map((s) => [s, 0])) as TicketStats['byStatus'];
    const byPriority = Object.fromEntries(PRIORITIES.map((p) => [p, 0])) as TicketStats['byPriority'];
    for (const r of rows.counts) {
      if (r.dimension === 'status' && r.value in byStatus) byStatus[r.value as keyof typeof byStatus] = Number(r.count);
      if (r.dimension === 'priority' && r.value in byPriority)
        byPriority[r.value as keyof typeof byPriority] = Number(r.count);
    }
    const perDay = rows.days.map((d) => ({
      day: d.day.toISOString().slice(0, 10),
      created: Number(d.created),
      cancelled: Number(d.cancelled),
    }));
    return { source: this.groupId, byStatus, byPriority, perDay };
  }
}
