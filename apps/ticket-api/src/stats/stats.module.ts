import { Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { AuthModule } from '../auth/auth.module';
import { APP_CONFIG } from '../common/tokens';
import { GetStatsUseCase } from './get-stats.use-case';
import { StatsController } from './stats.controller';
import { StatsRepository } from './stats.repository';
import { STATS_GROUP } from './stats.tokens';

/** GET /v1/stats. The group is STATS_GROUP_ID, the variable the stats consumer uses (AppConfig.stats). */
@Module({
  imports: [AuthModule],
  controllers: [StatsController],
  providers: [
    StatsRepository,
    GetStatsUseCase,
    { provide: STATS_GROUP, useFactory: (config: AppConfig) => config.stats.groupId, inject: [APP_CONFIG] },
  ],
})
export class StatsModule {}
