import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestMicroservice } from '@nestjs/common';
import { TicketEventsServer, type TicketEventsOptions } from '@tickets/event-consumer';
import { PinoNestLogger, type Logger } from '@tickets/logger';
import { StatsConsumerModule } from './stats-consumer.module';

/**
 * The stats projection consumer as a Nest microservice on the kit's transport (main.ts and the tests start
 * it so). `onCreated` gets the app before it starts listening (main.ts: so that a SIGTERM during the start
 * closes it).
 */
export async function createStatsConsumer(
  options: TicketEventsOptions,
  logger: Logger,
  onCreated?: (app: INestMicroservice) => void,
): Promise<{ app: INestMicroservice; server: TicketEventsServer }> {
  const server = new TicketEventsServer(options);
  const app = await NestFactory.createMicroservice(StatsConsumerModule.forRoot(options.groupId), {
    strategy: server,
    logger: new PinoNestLogger(logger.child({ component: 'nest' })),
    abortOnError: false,
  });
  onCreated?.(app);
  await app.listen();
  return { app, server };
}
