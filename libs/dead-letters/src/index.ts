export { DeadLetters } from './dead-letters';
export type { ActionRequest, DeadLettersOptions } from './dead-letters';
export { DEAD_LETTER_KINDS } from './dead-letter.types';
export type {
  ActionOutcome,
  ActionResult,
  Actor,
  AuditEntry,
  DeadLetterDetail,
  DeadLetterFilter,
  DeadLetterItem,
  DeadLetterKind,
  DeadLetterState,
} from './dead-letter.types';
// The consumer kind is the kit's: its producer for requeues comes from there too.
export {
  kafkaRepublisher,
  ConsumerDeadLetters,
  deadLetterFate,
  followReport,
  followRequeue,
  type FollowCommands,
  type FollowResult,
  type MessageRepublisher,
  type RawMessageOut,
} from '@tickets/event-consumer/admin';
export { parseTimeBound } from './time-bound';
