import './instrument';
import { loadConfigOrExit, loadEventConsumerConfigOrExit, ticketEventsOptions } from '@tickets/config';
import { createLogger, guardStdio } from '@tickets/logger';
import { failStartup } from '@tickets/startup';
import { createStatsConsumer } from './stats-consumer.app';

guardStdio();

async function main(): Promise<void> {
  const config = loadConfigOrExit('stats-consumer');
  const kit = loadEventConsumerConfigOrExit('stats-consumer');
  const logger = createLogger(config.logLevel, 'stats-consumer', undefined, config.logFormat);
  const options = ticketEventsOptions(config, kit, kit.stats.groupId, logger);
  try {
    const { server } = await createStatsConsumer(options, logger);
    logger.info(
      { groupId: options.groupId, topic: options.topic, metricsPort: server.metricsPort },
      'stats consumer running (SIGTERM/SIGINT to stop)',
    );
  } catch (err) {
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
