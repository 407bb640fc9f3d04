import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { PinoNestLogger, type Logger } from '@tickets/logger';
import { ConsumerModule } from './consumer.module';

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
