import { Inject, Injectable, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { OutboxNotifier, OutboxRelay, relayOptionsFromConfig, type RelayStats } from '@tickets/outbox';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { Metrics } from '../metrics/metrics';

/**
 * The outbox relay inside the API process (RELAY_ENABLED, default on). Any number of API processes may
 * run one: a single leader per database publishes (docs/relay.md); the others stand by. Also wakes
 * whichever relay leads after a write committed outbox rows (`eventsCommitted`).
 */
@Injectable()
export class RelayService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private relay?: OutboxRelay;
  private stopping?: Promise<void>;
  private readonly notifier: OutboxNotifier;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.notifier = new OutboxNotifier({
      databaseUrl: config.database.url,
      intervalMs: config.relay.notifyIntervalMs,
      logger: logger.child({ component: 'outbox-notifier' }),
      applicationName: 'ticket-api-outbox-notifier',
    });
  }

  /**
   * Call after a commit that wrote outbox rows. The leader in this process is woken directly; otherwise
   * the leader is in another process (or none leads yet) and gets a coalesced NOTIFY, at most one per
   * RELAY_NOTIFY_INTERVAL, sent outside the writer's transaction (see OutboxNotifier for why).
   */
  eventsCommitted(): void {
    if (this.relay?.health().isLeader) this.relay.wake();
    else this.notifier.committed();
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.relay.enabled) return;
    this.relay = new OutboxRelay(relayOptionsFromConfig(this.config, this.logger, { registry: this.metrics.registry }));
    await this.relay.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Stops the relay once (releasing its leader lock); later calls wait for that same stop. */
  stop(): Promise<void> {
    this.stopping ??= Promise.all([this.relay?.stop(), this.notifier.close()]).then(() => undefined);
    return this.stopping;
  }

  /** Outbox lag and counters, or null when this process runs no relay. */
  stats(): Promise<RelayStats> | null {
    return this.relay?.stats() ?? null;
  }
}
