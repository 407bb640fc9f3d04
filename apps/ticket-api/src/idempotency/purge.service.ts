import { Inject, Injectable, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { IdempotencyKeysRepository } from '@tickets/idempotency';

/** Runs the idempotency purge every IDEMPOTENCY_PURGE_INTERVAL inside the API process. */
@Injectable()
export class PurgeService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly keys: IdempotencyKeysRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.tick(), this.config.idempotency.purgeIntervalMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    if (this.running) return;
    this.running = this.keys
      .purge()
      .then((r) => {
        if (r.keysDeleted || r.responsesCleared) this.logger.info({ ...r }, 'idempotency purge');
      })
      .catch((err) => this.logger.warn({ err }, 'idempotency purge failed; will try again next interval'))
      .finally(() => (this.running = undefined));
  }
}
