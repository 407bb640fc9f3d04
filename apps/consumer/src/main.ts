import { loadConfigOrExit } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createConsumerApp } from './consumer.app';

async function main(): Promise<void> {
  const config = loadConfigOrExit('consumer');
  const logger = createLogger(config.logLevel, 'consumer');
  if (!config.notifier.webhookUrl) {
    logger.warn('NOTIFY_WEBHOOK_URL is not set: notifications of tenants without a webhook of their own are recorded as skipped');
  }
  try {
    await createConsumerApp(config, logger);
  } catch (err) {
    logger.fatal({ err }, 'consumer failed to start: are PostgreSQL (DATABASE_URL, migrated) and Kafka (KAFKA_BROKERS) up?');
    process.exit(1);
  }
  logger.info({ groupId: config.notifier.groupId, topic: config.kafka.topic }, 'consumer running (SIGTERM/SIGINT to stop)');
}

void main();
