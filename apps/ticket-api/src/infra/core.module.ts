import { DynamicModule, Global, Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { Metrics } from '../metrics/metrics';
import { Database } from './database';

/** What every feature module uses: the config, the logger, the database and the metrics registry. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    const providers = [
      { provide: APP_CONFIG, useValue: config },
      { provide: LOGGER, useValue: logger },
      Database,
      Metrics,
    ];
    return { module: CoreModule, providers, exports: providers };
  }
}
