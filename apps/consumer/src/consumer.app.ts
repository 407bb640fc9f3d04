import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestMicroservice } from '@nestjs/common';
import { ticketEventsOptions, type AppConfig, type EventConsumerConfig } from '@tickets/config';
import { FIXED_PLANS_OPTION, GENERIC_PLANS_OPTION, withSessionOption } from '@tickets/db';
import { TicketEventsServer, type TicketEventsOptions } from '@tickets/event-consumer';
import { PinoNestLogger, type Logger } from '@tickets/logger';
import { ConsumerModule } from './consumer.module';
import { hotInboxStatements } from './inbox/inbox.repository';
import { NotifierDispatcherService } from './notifier-dispatcher.service';

/**
 * Events per inbox statement: bounds the statement's parameter size and the work a crash loses; 1000
 * is where the statement's per-event cost stopped falling (docs/consumer.md).
 */
const NOTIFIER_CHUNK = 1000;

export interface NotifierApp {
  app: INestMicroservice;
  server: TicketEventsServer;
  dispatcher: NotifierDispatcherService;
}

/**
 * The kit's options for the notifier group (NOTIFIER_GROUP_ID, CONSUMER_PARTITIONS_CONCURRENCY, NOTIFIER_METRICS_PORT).
 * The kit's pool runs the notifier's inbox statement (inbox 'handler'), so its sessions start with
 * FIXED_PLANS_OPTION: planned while a fresh database's inbox was empty, the statement's generic plan
 * probed the inbox with a sequential scan per event and kept it while the table grew (docs/benchmarks.md).
 * And GENERIC_PLANS_OPTION: left to choose, PostgreSQL planned the statement with a lease afresh on every
 * call once the tables' statistics showed some rows, at more than twice its execution's CPU.
 */
export function notifierOptions(config: AppConfig, kit: EventConsumerConfig, logger?: Logger): TicketEventsOptions {
  const options = ticketEventsOptions(config, kit, config.notifier.groupId, logger);
  return {
    ...options,
    databaseUrl: withSessionOption(options.databaseUrl, `${FIXED_PLANS_OPTION} ${GENERIC_PLANS_OPTION}`),
    chunkSize: NOTIFIER_CHUNK,
    partitionsConcurrency: config.consumer.partitionsConcurrency,
    metrics: kit.notifierMetrics ? { ...kit.notifierMetrics, setting: 'NOTIFIER_METRICS_PORT' } : false,
  };
}

/**
 * The notifier as a Nest microservice on the kit's transport (main.ts, the tests and the benchmark
 * start it so). `over` replaces kit options (tests: topic, group, fault hooks); `dispatch: false` runs
 * no webhook dispatcher; `onCreated` gets the app before it starts listening (main.ts: so that a SIGTERM
 * during the start closes it). `app.close()`: the transport finishes its chunk and leaves the group, then
 * the dispatcher stops.
 */
export async function createConsumerApp(
  config: AppConfig,
  kit: EventConsumerConfig,
  logger: Logger,
  over: Partial<TicketEventsOptions> & { dispatch?: boolean; onCreated?: (app: INestMicroservice) => void } = {},
): Promise<NotifierApp> {
  const { dispatch = true, onCreated, ...rest } = over;
  // The statement of every chunk, parsed and planned on the kit's connections before the first fetch.
  const options = { ...notifierOptions(config, kit, logger), warmStatements: hotInboxStatements(dispatch), ...rest };
  const server = new TicketEventsServer(options);
  const app = await NestFactory.createMicroservice(
    ConsumerModule.forRoot(config, options.groupId, { dispatch, logger, registry: server.metrics.registry }),
    {
      strategy: server,
      logger: new PinoNestLogger(logger.child({ component: 'nest' })),
      abortOnError: false,
    },
  );
  onCreated?.(app);
  await app.listen();
  return { app, server, dispatcher: app.get(NotifierDispatcherService) };
}
