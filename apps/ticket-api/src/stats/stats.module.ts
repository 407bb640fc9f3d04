import { Module } from '@nestjs/common';
import { loadEventConsumerConfig } from '@tickets/config';
import { AuthModule } from '../auth/auth.module';
import { GetStatsUseCase } from './get-stats.use-case';
import { StatsController } from './stats.controller';
import { StatsRepository } from './stats.repository';
import { STATS_GROUP } from './stats.tokens';

/** GET /v1/stats. The group is read from STATS_GROUP_ID, the variable the stats consumer uses. */
@Module({
  imports: [AuthModule],
  controllers: [StatsController],
  providers: [StatsRepository, GetStatsUseCase, { provide: STATS_GROUP, useFactory: () => loadEventConsumerConfig().stats.groupId }],
})
export class StatsModule {}
