import { logLevel, type LogEntry, type logCreator } from 'kafkajs';
import type { Logger } from '@tickets/logger';

/**
 * kafkajs's log into pino, at warn at most (`component: kafkajs`): kafkajs logs every failed
 * connection attempt as an error, and the relay and the consumer log their own decisions about
 * those failures, so the client's chatter must not look like the process failing. Its lines about
 * an unreachable broker (a dozen per retry) go out at debug: the relay logs one line when the
 * broker becomes unreachable and one when it is back (OutageLog).
 */
const UNREACHABLE =
  /^(Connection error|Connection timeout|Failed to connect to seed broker|Failed to send messages: Connection (error|timeout))/;

export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: 'kafkajs' });
  return () => (entry: LogEntry) => {
    const {
      message,
      timestamp: _timestamp,
      logger: _logger,
      ...extra
    } = entry.log as LogEntry['log'] & { logger?: string };
    // Expected with the relay's bounded producer retries: see KafkaPublisher for why it is safe there.
    if (message.startsWith('Limiting retries for the idempotent producer') || UNREACHABLE.test(message))
      log.debug(extra, message);
    else if (entry.level <= logLevel.WARN) log.warn(extra, message);
    else if (entry.level === logLevel.INFO) log.debug(extra, message);
    else log.trace(extra, message);
  };
}
