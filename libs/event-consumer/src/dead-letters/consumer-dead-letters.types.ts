/** dead: waiting for an operator; requeued / discarded: an operator acted (listed only with `all`). */
export type ConsumerDeadLetterState = 'dead' | 'requeued' | 'discarded';

export interface ConsumerDeadLetterFilter {
  /** Only this consumer group's. */
  groupId?: string;
  /** One dead letter (its id). */
  id?: string;
  /** Only those whose message key (the ticket id) is this one, or one of these. */
  ticket?: string;
  tickets?: readonly string[];
  /** Case-insensitive substring of the reason. */
  reason?: string;
  since?: Date;
  until?: Date;
  limit: number;
  /** Include rows already requeued or discarded. */
  all?: boolean;
}

export interface ConsumerDeadLetterItem {
  id: string;
  state: ConsumerDeadLetterState;
  groupId: string;
  /** The message key when it is a uuid (the ticket id). */
  ticketId: string | null;
  eventId: string | null;
  eventType: string | null;
  reason: string;
  /** invalid (not an event), handler_failed (every attempt failed), or held behind `heldBy`, an earlier dead letter of its ticket. */
  cause: 'invalid' | 'handler_failed' | 'held';
  heldBy: string | null;
  deadAt: Date;
  /** group, topic[partition]@offset */
  where: string;
}

export interface ConsumerAuditEntry {
  action: 'requeue' | 'discard';
  actor: string;
  note: string | null;
  detail: unknown;
  at: Date;
}

export interface ConsumerDeadLetterDetail {
  item: ConsumerDeadLetterItem;
  /** The stored message: key, value, headers, and when it was resolved. */
  content: Record<string, unknown>;
  history: ConsumerAuditEntry[];
}

/** Who acts and why: recorded with every requeue and discard. */
export interface KitActor {
  by: string;
  note: string | null;
}

export type KitActionOutcome = 'requeued' | 'discarded' | 'would-requeue' | 'would-discard' | 'not-dead' | 'refused';

export interface KitActionResult {
  id: string;
  outcome: KitActionOutcome;
  message: string;
}

export interface ConsumerActionRequest {
  /** `id` for one dead letter; otherwise every dead one matching the filter (up to its limit: for a requeue the first in Kafka order, for a discard the newest). */
  filter: ConsumerDeadLetterFilter;
  actor: KitActor;
  /** Report what would happen; change nothing, audit nothing. */
  dryRun: boolean;
}
