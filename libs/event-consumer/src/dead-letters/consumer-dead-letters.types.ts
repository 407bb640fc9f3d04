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
  /** One requeued: what became of its copy, as `requeue --follow` sees it at one look. */
  copy?: FollowedCopy;
  /** The events of its ticket held behind it and still dead: how many, and the first in their order. */
  heldBehind?: { count: number; first: string };
  /**
   * The requeue that brings this event, or those held behind it, back next, and its dry run (what it would
   * produce, or why it is refused, naming the dead letter to requeue first): this one while dead; the first
   * held behind it once its copy is handled or it was discarded; its copy's dead letter when that failed again.
   * None while its copy is not read yet.
   */
  next?: { id: string; dryRun: KitActionResult[] };
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

/** How to follow a requeue's copies (ConsumerDeadLetters.follow). */
export interface FollowOptions {
  /** Give up after this long: the outcome is then `timeout`. */
  timeoutMs: number;
  /** How often to look (default 500 ms). */
  pollMs?: number;
  /** Who requeues the events held behind the copies (recorded in their audit rows). */
  actor: KitActor;
  /** Progress, a line at a time: on every change and at least every 10 s. */
  progress?: (line: string) => void;
}

/** A requeued dead letter and where its copy is. */
export interface FollowedCopy {
  /** The requeued dead letter, and its group. */
  id: string;
  groupId: string;
  eventId: string | null;
  ticketId: string | null;
  /** handled: the group applied the copy (or skipped it, applied before); dead-again: the group dead-lettered it again (`deadLetter`, with its reason); not-read: neither yet. */
  state: 'handled' | 'dead-again' | 'not-read';
  /** With dead-again: the copy's dead letter, its reason and cause, and for a held one what it waits behind. */
  deadLetter?: string;
  reason?: string;
  cause?: 'invalid' | 'handler_failed' | 'held';
  heldBy?: string;
}

export interface FollowResult {
  /**
   * handled: every copy handled; dead-again: one was dead-lettered again; refused: the requeue of events held
   * behind the copies was refused (an earlier event of the ticket is still dead: `requeued` names it); timeout:
   * some copy not read in time.
   */
  outcome: 'handled' | 'dead-again' | 'refused' | 'timeout';
  copies: FollowedCopy[];
  /** The requeues of the events the group held behind the copies meanwhile. */
  requeued: KitActionResult[];
}
