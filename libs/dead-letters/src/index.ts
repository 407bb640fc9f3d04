export { DeadLetters } from './dead-letters';
export type { ActionRequest } from './dead-letters';
export { DEAD_LETTER_KINDS } from './dead-letter.types';
export type { ActionOutcome, ActionResult, Actor, AuditEntry, DeadLetterDetail, DeadLetterFilter, DeadLetterItem, DeadLetterKind, DeadLetterState } from './dead-letter.types';
export { kafkaRepublisher } from './message-republisher';
export type { MessageRepublisher, RawMessageOut } from './message-republisher';
export { parseTimeBound } from './time-bound';
