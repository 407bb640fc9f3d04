import './instrument';
import { loadConfigOrExit, loadEventConsumerConfigOrExit } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createConsumerApp } from './consumer.app';

async function main(): Promise<void> {
  const config = loadConfigOrExit('consumer');
  const kit = loadEventConsumerConfigOrExit('consumer');
  const logger = createLogger(config.logLevel, 'consumer');
  if (!config.notifier.webhookUrl) {
    logger.warn('NOTIFY_WEBHOOK_URL is not set: notifications of tenants without a webhook of their own are recorded as skipped');
  }
  try {
    const { server } = await createConsumerApp(config, kit, logger);
    logger.info({ groupId: config.notifier.groupId, topic: config.kafka.topic, metricsPort: server.metricsPort }, 'consumer running (SIGTERM/SIGINT to stop)');
  } catch (err) {
    logger.fatal({ err }, 'consumer failed to start: are PostgreSQL (DATABASE_URL, migrated) and Kafka (KAFKA_BROKERS) up?');
    process.exit(1);
  }
}

void main();
