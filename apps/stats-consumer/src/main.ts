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
  // Installed before the start, so that a signal while it waits (for the topic, say) stops it cleanly too.
  let app: INestMicroservice | undefined;
  const signals = stopOnSignals('stats-consumer', async () => app?.close(), logger);
  try {
    const { server } = await createStatsConsumer(options, logger, (created) => (app = created));
    logger.info(
      { groupId: options.groupId, topic: options.topic, metricsPort: server.metricsPort },
      'stats consumer running (SIGTERM/SIGINT to stop)',
    );
  } catch (err) {
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
