import './instrument';
import { loadConfigOrExit, loadEventConsumerConfigOrExit, ticketEventsOptions } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createStatsConsumer } from './stats-consumer.app';

async function main(): Promise<void> {
  const config = loadConfigOrExit('stats-consumer');
  const kit = loadEventConsumerConfigOrExit('stats-consumer');
  const logger = createLogger(config.logLevel, 'stats-consumer');
  const options = ticketEventsOptions(config, kit, kit.stats.groupId, logger);
  try {
    const { server } = await createStatsConsumer(options, logger);
    logger.info({ groupId: options.groupId, topic: options.topic, metricsPort: server.metricsPort }, 'stats consumer running (SIGTERM/SIGINT to stop)');
  } catch (err) {
    logger.fatal({ err }, 'stats consumer failed to start: are PostgreSQL (DATABASE_URL, migrated) and Kafka (KAFKA_BROKERS) up?');
    process.exit(1);
  }
}

void main();

