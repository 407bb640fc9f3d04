import { Inject, Injectable, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { OutboxNotifier, OutboxRelay, relayOptionsFromConfig, type RelayStats } from '@tickets/outbox';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { Metrics } from '../metrics/metrics';

/** How long the API's start waits for its relay's first outcome (RelayStartState) before it listens anyway. */
const RELAY_START_WAIT_MS = 5_000;

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

  /**
   * Starts the relay, then waits (at most RELAY_START_WAIT_MS) until it leads with its producer connected,
   * stands by, or retries: the API listens after that, so the first creates' events are not held up behind
   * the producer's connection (in a debug log of a start on a 2-core VM, the relay had its topic 111 ms after
   * the API listened and was still creating its producer; docs/benchmarks.md, "The whole path after a start").
   */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.relay.enabled) return;
    this.relay = new OutboxRelay(relayOptionsFromConfig(this.config, this.logger, { registry: this.metrics.registry }));
    await this.relay.start();
    let timer: NodeJS.Timeout | undefined;
    const state = await Promise.race([
      this.relay.whenSettled(),
      new Promise<'still starting'>(
        (resolve) => (timer = setTimeout(() => resolve('still starting'), RELAY_START_WAIT_MS)),
      ),
    ]);
    clearTimeout(timer);
    if (state !== 'leading' && state !== 'standby')
      this.logger.warn(
        { relay: state, waitedMs: RELAY_START_WAIT_MS },
        'the outbox relay is not publishing yet; the API starts anyway and the relay retries (see its log lines)',
      );
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
