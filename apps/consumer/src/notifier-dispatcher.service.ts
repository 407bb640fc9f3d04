import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import {
  WebhookDispatcher,
  type AttemptRecord,
  type DispatcherStats,
  type HandOverLease,
  type HandOverOptions,
  type HandOverResult,
} from '@tickets/notifications';
import type { Registry } from 'prom-client';

/**
 * The webhook dispatcher of the notifier for the lifetime of the Nest application: started on
 * bootstrap, stopped on shutdown (after the kit's transport has left the group). The controller's
 * inbox statement runs through handOver(): the notifications it leases are sent at once, the
 * dispatcher is woken for the rest, and the statement records the deliveries finished since the last
 * statement that recorded any. `dispatch: false` (the benchmark) runs none.
 * Its delivery metrics go to `registry` (the kit's, served on NOTIFIER_METRICS_PORT).
 */
@Injectable()
export class NotifierDispatcherService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly prisma: PrismaClient;
  private readonly dispatcher?: WebhookDispatcher;

  constructor(config: AppConfig, groupId: string, dispatch: boolean, logger?: Logger, registry?: Registry) {
    // Fixed and generic plans: the dispatcher's claim and record statements read by key (FIXED_PLANS_OPTION,
    // libs/db) and keep their generic plans (GENERIC_PLANS_OPTION; left to choose, PostgreSQL planned the record
    // statement afresh on every call once autovacuum had analysed `notifications`). The inbox statement runs on
    // the kit's pool, which notifierOptions() sets up the same way.
    this.prisma = createPrismaClient(config.database.url, config.database.poolMax, 'tickets-consumer', {
      fixedPlans: true,
      genericPlans: true,
    });
    this.dispatcher = dispatch
      ? new WebhookDispatcher({
          ...config.notifier,
          prisma: this.prisma,
          groupId,
          defaultSecret: config.notifier.webhookSecret,
          defaultUrl: config.notifier.webhookUrl ?? null,
          secretKeys: config.notifier.secretKeys.keys,
          logger: logger?.child({ component: 'dispatcher', groupId }),
          registry,
        })
      : undefined;
  }

  /** See WebhookDispatcher.handOver; without a dispatcher, `create` runs without a lease and records nothing. */
  handOver<R extends HandOverResult>(
    maxLeased: number,
    create: (lease?: HandOverLease, records?: readonly AttemptRecord[]) => Promise<R>,
    options?: HandOverOptions,
  ): Promise<R> {
    return this.dispatcher ? this.dispatcher.handOver(maxLeased, create, options) : create(undefined, undefined);
  }

  stats(): DispatcherStats | undefined {
    return this.dispatcher?.stats();
  }

  onApplicationBootstrap(): void {
    this.dispatcher?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.dispatcher?.stop();
    await this.prisma.$disconnect();
  }
}
