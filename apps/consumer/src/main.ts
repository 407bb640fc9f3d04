import './instrument';
import { loadConfigOrExit, loadEventConsumerConfigOrExit } from '@tickets/config';
import type { INestMicroservice } from '@nestjs/common';
import { createLogger, guardStdio } from '@tickets/logger';
import { failStartup, stopOnSignals } from '@tickets/startup';
import { createConsumerApp } from './consumer.app';

guardStdio();

async function main(): Promise<void> {
  const config = loadConfigOrExit('consumer');
  const kit = loadEventConsumerConfigOrExit('consumer');
  const logger = createLogger(config.logLevel, 'consumer', undefined, config.logFormat);
  if (!config.notifier.webhookUrl) {
    logger.warn(
      'NOTIFY_WEBHOOK_URL is not set: notifications of tenants without a webhook of their own are recorded as skipped',
    );
  }
  // Installed before the start, so that a signal while it starts (waiting for the topic, say) stops it cleanly
  // too: the stop waits for the app to exist (or for the start to fail) and closes it.
  let created!: (app: INestMicroservice | undefined) => void;
  const app = new Promise<INestMicroservice | undefined>((resolve) => (created = resolve));
  const signals = stopOnSignals('consumer', async () => (await app)?.close(), logger);
  try {
    const { server } = await createConsumerApp(config, kit, logger, { onCreated: created });
    logger.info(
      { groupId: config.notifier.groupId, topic: config.kafka.topic, metricsPort: server.metricsPort },
      'consumer running (SIGTERM/SIGINT to stop)',
    );
  } catch (err) {
    created(undefined);
    if (signals.stopping()) return; // the start ended by the signal: stopOnSignals exits
    await failStartup(
      'consumer',
      err,
      {
        ports: kit.notifierMetrics
          ? [{ variable: 'NOTIFIER_METRICS_PORT', hostVariable: 'EVENT_CONSUMER_METRICS_HOST', ...kit.notifierMetrics }]
          : [],
        databaseUrl: config.database.url,
        brokers: config.kafka.brokers,
      },
      logger,
    );
  }
}

void main();
