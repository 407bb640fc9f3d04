import { type DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { NotifierService } from './notifier.service';
import { APP_CONFIG, LOGGER } from './tokens';

@Module({})
export class ConsumerModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: ConsumerModule,
      providers: [{ provide: APP_CONFIG, useValue: config }, { provide: LOGGER, useValue: logger }, NotifierService],
      exports: [NotifierService],
    };
  }
}
