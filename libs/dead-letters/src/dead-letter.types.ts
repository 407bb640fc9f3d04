import type { ConsumerDeadLetterDetail } from '@tickets/event-consumer/admin';
/** outbox: outbox_dead_letters; consumer: consumer_dead_letters; notification: notifications with status dead. */
export type DeadLetterKind = 'outbox' | 'consumer' | 'notification';
export const DEAD_LETTER_KINDS: readonly DeadLetterKind[] = ['outbox', 'consumer', 'notification'];

/** dead: waiting for an operator; requeued / discarded: an operator acted (only listed with `all`). */
export type DeadLetterState = 'dead' | 'requeued' | 'discarded';

export interface DeadLetterFilter {
  kind?: DeadLetterKind;
  /** outbox: the event id; consumer: the dead letter's id; notification: the notification id. */
  id?: string;
  /** Tenant slug. Consumer dead letters match through their key (the ticket id) when it names a known ticket. */
  tenant?: string;
  ticket?: string;
  /**
   * Consumer group: a consumer dead letter's group, a notification's. Outbox dead letters belong to no
   * group, so a group filter leaves them out.
   */
  group?: string;
  /** Case-insensitive substring of the reason (a notification's: its last error). */
  reason?: string;
  since?: Date;
  until?: Date;
  limit: number;
  /** Include rows already requeued or discarded. */
  all?: boolean;
}

export interface DeadLetterItem {
  kind: DeadLetterKind;
  id: string;
  state: DeadLetterState;
  tenant: string | null;
  ticketId: string | null;
  eventId: string | null;
  eventType: string | null;
  reason: string;
  attempts: number | null;
  /** When it was dead-lettered (a notification: its last attempt). */
  deadAt: Date;
  /** Where it lives: the outbox seq, the consumer group/topic/partition/offset, the notification's group and target. */
  where: string;
}

export interface AuditEntry {
  action: 'requeue' | 'discard';
  actor: string;
  note: string | null;
  detail: unknown;
  at: Date;
}

/** One dead letter with its content and its history of operator actions. */
export interface DeadLetterDetail {
  item: DeadLetterItem;
  /** The event text (outbox, notification) or the stored message (consumer: value, key, headers). */
  content: Record<string, unknown>;
  /** A notification's HTTP attempts, oldest first. */
  attempts?: Array<{ attemptNo: number; statusCode: number | null; error: string | null; at: Date }>;
  history: AuditEntry[];
  /** A consumer dead letter's group, what became of its copy when requeued, the events held behind it, and the requeue to run next (ConsumerDeadLetters.show). */
  consumer?: Pick<ConsumerDeadLetterDetail, 'copy' | 'heldBehind' | 'next'> & { groupId: string };
}

/** Who acts and why: recorded in dead_letter_actions with every requeue and discard. */
export interface Actor {
  by: string;
  note: string | null;
}

export type ActionOutcome =
  /** Done (or, with dry-run, what would be done). */
  | 'requeued'
  | 'discarded'
  | 'would-requeue'
  | 'would-discard'
  /** Nothing to do: it is no longer dead (an earlier requeue or discard, or it never was). */
  | 'not-dead'
  /** Not done, and why: it would fail again, or it is held back by an earlier dead letter. */
  | 'refused';

export interface ActionResult {
  kind: DeadLetterKind;
  id: string;
  outcome: ActionOutcome;
  message: string;
  /** Outbox: the events moved back together, in publishing order. */
  eventIds?: string[];
}
