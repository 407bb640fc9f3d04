import type { TicketEvent } from '@tickets/contracts';
import { storableHeaders, type RawMessage } from './envelope-parser';
import { shellQuoted } from './shell-quoted';
import type { DeadLetterItem, HeldBehind } from './inbox.repository';

/**
 * An event id as PostgreSQL returns a uuid (lower case): the contracts accept either case, and the
 * inbox's answer is matched against the event's own id.
 */
export function idKey(id: string): string {
  return id.toLowerCase();
}

/** A valid event as the kit reads it: what its dead letter stores. */
type ReadEvent = { offset: string; event: TicketEvent; value: Buffer; headers?: RawMessage['headers'] };

/** The dead letter of a valid event (a handler's failure, or held): the message as read, and its event id. */
export function eventDeadLetter(e: ReadEvent, reason: string): DeadLetterItem & { eventId: string } {
  return {
    offset: e.offset,
    reason,
    key: e.event.ticketId,
    value: e.value.toString('utf8'),
    headers: storableHeaders(e.headers),
    eventId: e.event.id,
  };
}

/**
 * The dead letters of the events a claim held (`held`: event id → the dead letter it waits behind):
 * their ticket has an earlier event dead, or requeued with its copy still to come, so handling them now
 * would apply the ticket's events out of order. A requeue of the dead letter still dead produces them
 * again after it, in their order (ConsumerDeadLetters.requeue); one held behind a requeued event is
 * requeued once that event's copy is handled.
 */
export function heldDeadLetters(
  events: readonly ReadEvent[],
  held: ReadonlyMap<string, HeldBehind>,
  groupId: string,
): (DeadLetterItem & { eventId: string })[] {
  return events.flatMap((e) => {
    const head = held.get(idKey(e.event.id));
    if (!head) return [];
    // This event first, then the dead letter it waits behind: the two ids are not to be mistaken for each other.
    const what = `${e.event.type} ${e.event.id} not handled`;
    const reason = head.pending
      ? `${what}: held behind dead letter ${head.id}, an earlier event of ticket ${e.event.ticketId} requeued and not yet handled again: requeue this one once the group has handled that one's copy (ticket-events dead-letters requeue --group ${shellQuoted(groupId)} --ticket ${e.event.ticketId}; requeue --follow does this by itself)`
      : `${what}: held behind dead letter ${head.id}, an earlier event of ticket ${e.event.ticketId}: requeue that one, which brings this one back after it, or discard it and requeue this one`;
    return [{ ...eventDeadLetter(e, reason), held: head.id }];
  });
}
