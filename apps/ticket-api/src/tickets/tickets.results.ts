import type { KeyedResult } from '../idempotency/keyed-command.types';

/** What a ticket write did when it ran; stored with its key. Expected outcomes are values. */
export type TicketOutcome = 'created' | 'deduplicated' | 'cancelled' | 'already_cancelled';

/** What a ticket write endpoint answers: the answer, and whether it came from the key's store. */
export type WriteResult = KeyedResult<TicketOutcome>;
