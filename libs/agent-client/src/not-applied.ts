import type { CreateTicketInput, Ticket } from './ticket-client.types';

/** The fields of a create that a deduplicated answer can leave unapplied (externalRef is the one they share). */
export type NotAppliedField = 'title' | 'description' | 'priority' | 'requester' | 'metadata';

/**
 * For a create deduplicated by its `externalRef`: the fields the caller sent that differ from the ticket that
 * already existed, which keeps its own (empty when none does). A field left out was not sent, so it is not
 * listed. The title is compared trimmed, as the server trims it. Pure.
 */
export function notAppliedFields(input: CreateTicketInput, ticket: Ticket): NotAppliedField[] {
  const differing: (NotAppliedField | false)[] = [
    input.title.trim() !== ticket.title && 'title',
    input.description !== undefined && input.description !== ticket.description && 'description',
    input.priority !== undefined && input.priority !== ticket.priority && 'priority',
    input.requester !== undefined && !sameJson(input.requester, ticket.requester) && 'requester',
    input.metadata !== undefined && !sameJson(input.metadata, ticket.metadata) && 'metadata',
  ];
  return differing.filter((f): f is NotAppliedField => f !== false);
}

/** The same JSON value, whatever the order of object keys. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) =>
      Object.prototype.hasOwnProperty.call(b, k) &&
      sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}
