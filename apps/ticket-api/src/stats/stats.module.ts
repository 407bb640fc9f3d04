import { Module } from '@nestjs/common';
import { loadEventConsumerConfig } from '@tickets/config';
import { GetStatsUseCase } from './get-stats.use-case';
import { StatsController } from './stats.controller';
import { StatsRepository } from './stats.repository';
import { STATS_GROUP } from './stats.tokens';

/**
 * GET /v1/stats. Needs Database and APP_CONFIG (for ApiKeyGuard) from the application's global
 * providers. The group is read from STATS_GROUP_ID, the variable the stats consumer uses.
 */
@Module({
  controllers: [StatsController],
  providers: [StatsRepository, GetStatsUseCase, { provide: STATS_GROUP, useFactory: () => loadEventConsumerConfig().stats.groupId }],
})
export class StatsModule {}
