import { logLevel, type LogEntry, type logCreator } from 'kafkajs';
import type { Logger } from '@tickets/logger';

/**
 * kafkajs's log into pino, at warn at most (`component: kafkajs`): kafkajs logs every failed
 * connection attempt as an error, and the relay and the consumer log their own decisions about
 * those failures, so the client's chatter must not look like the process failing.
 */
export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: 'kafkajs' });
  return () => (entry: LogEntry) => {
    const { message, timestamp: _timestamp, logger: _logger, ...extra } = entry.log as LogEntry['log'] & { logger?: string };
    // Expected with the relay's bounded producer retries: see KafkaPublisher for why it is safe there.
    if (message.startsWith('Limiting retries for the idempotent producer')) log.debug(extra, message);
    else if (entry.level <= logLevel.WARN) log.warn(extra, message);
    else if (entry.level === logLevel.INFO) log.debug(extra, message);
    else log.trace(extra, message);
  };
}
