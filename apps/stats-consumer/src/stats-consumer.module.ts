import { type DynamicModule, Module } from '@nestjs/common';
import { flushTelemetry } from '@tickets/telemetry';
import { StatsEventsController } from './stats-events.controller';
import { StatsProjectionRepository } from './stats-projection.repository';
import { FLUSH_TELEMETRY, STATS_GROUP_ID } from './tokens';

@Module({})
export class StatsConsumerModule {
  static forRoot(groupId: string): DynamicModule {
    return {
      module: StatsConsumerModule,
      controllers: [StatsEventsController],
      providers: [
        StatsProjectionRepository,
        { provide: STATS_GROUP_ID, useValue: groupId },
        // Nest's shutdown hooks end the process with the signal: the last spans are sent before that.
        { provide: FLUSH_TELEMETRY, useValue: { onApplicationShutdown: flushTelemetry } },
      ],
    };
  }
}
