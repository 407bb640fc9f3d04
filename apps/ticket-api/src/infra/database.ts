import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createDatabaseClients, type Prisma, type PrismaClient } from '@tickets/db';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { APP_CONFIG, LOGGER } from '../common/tokens';

export type Tx = Prisma.TransactionClient;

/** The API's one Prisma client (pg pool behind the driver adapter). */
@Injectable()
export class Database implements OnApplicationShutdown {
  readonly prisma: PrismaClient;
  /** One statement over the same pool, without Prisma's query layer: for the create path only (see DatabaseClients.query). */
  readonly query: <T>(sql: Prisma.Sql, name?: string) => Promise<T[]>;
  private readonly close: () => Promise<void>;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(LOGGER) logger: Logger) {
    const log = logger.child({ component: 'database' });
    const clients = createDatabaseClients(config.database.url, config.database.poolMax, 'ticket-api', {
      fixedPlans: true,
      onIdleError: (err) =>
        log.warn(
          { err: err.message },
          'an idle database connection was closed by the server; the next statement opens a new one',
        ),
    });
    this.prisma = clients.prisma;
    this.query = clients.query;
    this.close = clients.close;
  }

  /** The one way to run a multi-statement write: an interactive Prisma transaction. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(work, { maxWait: 5_000, timeout: 15_000 });
  }

  /**
   * Closes the pool last: every service that runs statements in the background (purge, reconcile
   * schedule, console, relay) stops in beforeApplicationShutdown, which Nest runs for every provider
   * before any onApplicationShutdown. A statement after $disconnect would make Prisma open a new pool
   * that nothing ever closes.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
