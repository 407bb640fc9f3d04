import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { createDatabaseClients, type Prisma, type PrismaClient } from '@tickets/db';
import type { AppConfig } from '@tickets/config';
import { APP_CONFIG } from '../common/tokens';

export type Tx = Prisma.TransactionClient;

/** The API's one Prisma client (pg pool behind the driver adapter). */
@Injectable()
export class Database implements OnModuleDestroy {
  readonly prisma: PrismaClient;
  /** One statement over the same pool, without Prisma's query layer: for the create path only (see DatabaseClients.query). */
  readonly query: <T>(sql: Prisma.Sql, name?: string) => Promise<T[]>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const clients = createDatabaseClients(config.database.url, config.database.poolMax, 'ticket-api');
    this.prisma = clients.prisma;
    this.query = clients.query;
  }

  /** The one way to run a multi-statement write: an interactive Prisma transaction. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(work, { maxWait: 5_000, timeout: 15_000 });
  }

  async onModuleDestroy(): Promise<void> {
    await this.prisma.$disconnect();
  }
}
