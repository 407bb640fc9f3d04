import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createDatabaseClients, type Prisma, type PrismaClient, type WarmReport } from '@tickets/db';
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
  private readonly warm: (statements: Prisma.Sql[], connections: number) => Promise<WarmReport>;
  private readonly warmConnections: number;
  private readonly log: Logger;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(LOGGER) logger: Logger) {
    const log = logger.child({ component: 'database' });
    this.log = log;
    this.warmConnections = config.database.warmConnections;
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
    this.warm = clients.warm;
  }

  /**
   * At start: opens DB_POOL_WARM connections (at most DB_POOL_MAX) and loads on each what the first run of
   * `statements` would (warmConnections, the kit's), so that the first requests after a start find them open
   * and pay no catalog loads (5-9 ms a connection on a quiet 2-core VM, 30-45 ms under load). The pool keeps
   * them. A failure is logged and the start goes on: the requests then open their connections themselves.
   */
  async warmUp(statements: Prisma.Sql[]): Promise<void> {
    if (this.warmConnections === 0) return;
    try {
      const { connections, ms, failed } = await this.warm(statements, this.warmConnections);
      this.log.info({ connections, ms: Math.round(ms) }, 'database connections opened and warmed');
      // The API's own statements: one that cannot be planned is a bug or a missing migration, which the requests will show.
      for (const f of failed)
        this.log.warn({ ...f }, 'a hot statement could not be planned at start, so it was not warmed');
    } catch (err) {
      this.log.warn(
        { err },
        'could not open database connections to warm them; starting anyway, the first requests open their own',
      );
    }
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
