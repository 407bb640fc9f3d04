import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import { consumerOptionsFromConfig, startConsumer, type RunningConsumer } from './consumer';

/**
 * Runs the Kafka consumer of `ticket-events` (inbox + notifications) and its webhook dispatcher for
 * the lifetime of the Nest application. Built by ConsumerModule.forRoot from the config and logger.
 */
@Injectable()
export class NotificationConsumerService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly prisma: PrismaClient;
  private running?: RunningConsumer;

  constructor(
    private readonly config: AppConfig,
    private readonly logger: Logger,
  ) {
    this.prisma = createPrismaClient(config.database.url, config.database.poolMax, 'tickets-consumer');
  }

  async onApplicationBootstrap(): Promise<void> {
    this.running = await startConsumer({
      ...consumerOptionsFromConfig(this.config, this.prisma, this.logger),
      onFatal: (err) => {
        // Let the supervisor restart the process: the shutdown hooks still run (SIGTERM), exit code 1.
        this.logger.fatal({ err }, 'the Kafka consumer stopped for good; shutting down');
        process.exitCode = 1;
        process.kill(process.pid, 'SIGTERM');
      },
    });
  }

  stats() {
    return this.running?.stats();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.running?.stop();
    await this.prisma.$disconnect();
  }
}
