import './instrument';
import { loadConfigOrExit, loadEventConsumerConfigOrExit, ticketEventsOptions } from '@tickets/config';
import type { INestMicroservice } from '@nestjs/common';
import { createLogger, guardStdio } from '@tickets/logger';
import { failStartup, stopOnSignals } from '@tickets/startup';
import { createStatsConsumer } from './stats-consumer.app';

guardStdio();

async function main(): Promise<void> {
  const config = loadConfigOrExit('stats-consumer');
  const kit = loadEventConsumerConfigOrExit('stats-consumer');
  const logger = createLogger(config.logLevel, 'stats-consumer', undefined, config.logFormat);
  const options = ticketEventsOptions(config, kit, kit.stats.groupId, logger);
  // Installed before the start, so that a signal while it starts (waiting for the topic, say) stops it cleanly
  // too: the stop waits for the app to exist (or for the start to fail) and closes it.
  let created!: (app: INestMicroservice | undefined) => void;
  const app = new Promise<INestMicroservice | undefined>((resolve) => (created = resolve));
  const signals = stopOnSignals('stats-consumer', async () => (await app)?.close(), logger);
  try {
    const { server } = await createStatsConsumer(options, logger, created);
    logger.info(
      { groupId: options.groupId, topic: options.topic, metricsPort: server.metricsPort },
      'stats consumer running (SIGTERM/SIGINT to stop)',
    );
  } catch (err) {
    created(undefined);
    if (signals.stopping()) return; // the start ended by the signal: stopOnSignals exits
    await failStartup(
      'stats-consumer',
      err,
      {
        ports: kit.metrics
          ? [{ variable: 'EVENT_CONSUMER_METRICS_PORT', hostVariable: 'EVENT_CONSUMER_METRICS_HOST', ...kit.metrics }]
          : [],
        databaseUrl: config.database.url,
        brokers: config.kafka.brokers,
      },
      logger,
    );
  }
}

void main();
