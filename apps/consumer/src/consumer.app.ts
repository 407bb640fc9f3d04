import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { ConsumerModule } from './consumer.module';

class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
}

/**
 * The consumer as a Nest standalone application context (no HTTP server): the consumer and its
 * dispatcher start on bootstrap and stop on close / SIGTERM. main.ts and the e2e tests start it so.
 */
export async function createConsumerApp(config: AppConfig, logger: Logger): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(ConsumerModule.forRoot(config, logger), {
    logger: new PinoNestLogger(logger.child({ component: 'nest' })),
    abortOnError: false,
  });
  app.enableShutdownHooks();
  await app.init();
  return app;
}
