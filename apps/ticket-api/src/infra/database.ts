import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import type { AppConfig } from '@tickets/config';
import { APP_CONFIG } from '../common/tokens';

/** The API's one Prisma client (pg pool behind the driver adapter). */
@Injectable()
export class Database implements OnModuleDestroy {
  readonly prisma: PrismaClient;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.prisma = createPrismaClient(config.database.url, config.database.poolMax, 'ticket-api');
  }

  async onModuleDestroy(): Promise<void> {
    await this.prisma.$disconnect();
  }
}
