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
/**
 * A group coordinator that is still loading its partition of __consumer_offsets (every start of a
 * broker, and after a coordinator moved), or that moved: normal transient states that kafkajs retries
 * by itself. It logs each answer as an error ("Response JoinGroup(...)", error "The coordinator is
 * loading ..."); they go out at debug. A coordinator that never comes back surfaces as the consumer's
 * own error once kafkajs gives up.
 */
const COORDINATOR_TRANSIENT =
  /^(The coordinator is loading|The coordinator is not available|This is not the correct coordinator)/;

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
    if (
      message.startsWith('Limiting retries for the idempotent producer') ||
      UNREACHABLE.test(message) ||
      (typeof extra.error === 'string' && COORDINATOR_TRANSIENT.test(extra.error))
    )
      log.debug(extra, message);
    else if (entry.level <= logLevel.WARN) log.warn(extra, message);
    else if (entry.level === logLevel.INFO) log.debug(extra, message);
    else log.trace(extra, message);
  };
}
