import { type DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { NotificationConsumerService } from './notification-consumer.service';

@Module({})
export class ConsumerModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: ConsumerModule,
      providers: [{ provide: NotificationConsumerService, useFactory: () => new NotificationConsumerService(config, logger) }],
      exports: [NotificationConsumerService],
    };
  }
}
