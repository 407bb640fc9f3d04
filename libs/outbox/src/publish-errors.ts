import { storableText } from '@tickets/contracts';
import { kafkaErrorType } from '@tickets/kafka';

/**
 * How the relay reacts to a failed `producer.send`:
 * - `permanent`: the broker rejected the records themselves (too large, invalid). Retrying the same
 *   bytes cannot help, so the row counts an attempt and is dead-lettered after `maxAttempts`.
 * - `producer-state`: the idempotent producer's session is unusable (sequence or epoch fenced).
 *   The relay builds a new producer and retries; the broker can no longer de-duplicate that retry.
 * - `transient`: everything else (broker down, timeouts, leader moves, authorisation while an ACL is
 *   being fixed ...). Retried forever with backoff; never dead-lettered.
 */
export type PublishErrorKind = 'permanent' | 'producer-state' | 'transient';

const PERMANENT = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);
const PRODUCER_STATE = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'DUPLICATE_SEQUENCE_NUMBER',
]);

export function classifyPublishError(error: unknown): PublishErrorKind {
  const type = kafkaErrorType(error);
  if (type && PERMANENT.has(type)) return 'permanent';
  if (type && PRODUCER_STATE.has(type)) return 'producer-state';
  return 'transient';
}

/** A short, log- and column-friendly description: `MESSAGE_TOO_LARGE: The request included a message larger ...`. */
export function describePublishError(error: unknown): string {
  const type = kafkaErrorType(error);
  const message = error instanceof Error ? error.message : String(error);
  return storableText(type && !message.includes(type) ? `${type}: ${message}` : message, 500);
}
