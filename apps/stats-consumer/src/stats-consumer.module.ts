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
        // app.close() (main.ts on SIGTERM, then it exits): the last spans are sent before the exit.
        { provide: FLUSH_TELEMETRY, useValue: { onApplicationShutdown: flushTelemetry } },
      ],
    };
  }
}
