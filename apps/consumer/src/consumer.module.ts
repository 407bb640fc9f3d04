import { type DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import type { Registry } from 'prom-client';
import { flushTelemetry } from '@tickets/telemetry';
import { InboxRepository } from './inbox/inbox.repository';
import { NotifierDispatcherService } from './notifier-dispatcher.service';
import { NotifierController } from './notifier.controller';
import { DEFAULT_WEBHOOK_URL, FLUSH_TELEMETRY } from './tokens';

@Module({})
export class ConsumerModule {
  static forRoot(
    config: AppConfig,
    groupId: string,
    opts: { dispatch: boolean; logger?: Logger; registry?: Registry },
  ): DynamicModule {
    return {
      module: ConsumerModule,
      controllers: [NotifierController],
      providers: [
        InboxRepository,
        // app.close() (main.ts on SIGTERM, then it exits): the last spans are sent before the exit.
        { provide: FLUSH_TELEMETRY, useValue: { onApplicationShutdown: flushTelemetry } },
        { provide: DEFAULT_WEBHOOK_URL, useValue: config.notifier.webhookUrl ?? null },
        {
          provide: NotifierDispatcherService,
          useFactory: () => new NotifierDispatcherService(config, groupId, opts.dispatch, opts.logger, opts.registry),
        },
      ],
    };
  }
}
