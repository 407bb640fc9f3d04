import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { OutboxRelay, relayOptionsFromConfig, type RelayStats } from '@tickets/outbox';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { Metrics } from '../metrics/metrics';

/**
 * The outbox relay inside the API process (RELAY_ENABLED, default on). Any number of API processes may
 * run one: a single leader per database publishes (docs/relay.md); the others stand by.
 */
@Injectable()
export class RelayService implements OnApplicationBootstrap, OnApplicationShutdown {
  private relay?: OutboxRelay;
  private stopping?: Promise<void>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.relay.enabled) return;
    this.relay = new OutboxRelay(relayOptionsFromConfig(this.config, this.logger, { registry: this.metrics.registry }));
    await this.relay.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Stops the relay once (releasing its leader lock); later calls wait for that same stop. */
  stop(): Promise<void> {
    this.stopping ??= this.relay?.stop() ?? Promise.resolve();
    return this.stopping;
  }

  /** Outbox lag and counters, or null when this process runs no relay. */
  stats(): Promise<RelayStats> | null {
    return this.relay?.stats() ?? null;
  }
}
