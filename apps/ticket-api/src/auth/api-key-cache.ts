import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { ApiKeyChangeWatch } from '@tickets/tenants';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { ApiKeyResolver } from './api-key.resolver';

/**
 * Clears this process's API key cache on every api_keys change notification (a revoke, a rotation's
 * cut-over, a deleted key, from the CLI or from SQL), over a connection of its own.
 */
@Injectable()
export class ApiKeyCacheInvalidation implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly watch: ApiKeyChangeWatch;

  constructor(resolver: ApiKeyResolver, @Inject(APP_CONFIG) config: AppConfig, @Inject(LOGGER) logger: Logger) {
    const log = logger.child({ component: 'api-key-cache' });
    this.watch = new ApiKeyChangeWatch({
      databaseUrl: config.database.url,
      applicationName: 'ticket-api-key-watch',
      onChange: () => resolver.clear(),
      onTrouble: (message, err) => log.warn({ err: err.message }, message),
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.watch.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.watch.stop();
  }
}
