import { type DynamicModule, Module } from '@nestjs/common';
import { StatsEventsController } from './stats-events.controller';
import { StatsProjectionRepository } from './stats-projection.repository';
import { STATS_GROUP_ID } from './tokens';

@Module({})
export class StatsConsumerModule {
  static forRoot(groupId: string): DynamicModule {
    return {
      module: StatsConsumerModule,
      controllers: [StatsEventsController],
      providers: [StatsProjectionRepository, { provide: STATS_GROUP_ID, useValue: groupId }],
    };
  }
}
