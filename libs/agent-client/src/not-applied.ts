import type { CreateTicketInput, Ticket } from './ticket-client.types';

/** The fields of a create that a deduplicated answer can leave unapplied (externalRef is the one they share). */
export type NotAppliedField = 'title' | 'description' | 'priority' | 'requester' | 'metadata';

/**
 * For a create deduplicated by its `externalRef`: the fields the caller sent that differ from the ticket that
 * already existed, which keeps its own (empty when none does). Each field is compared as it goes over the wire,
 * in its JSON form: JSON drops an undefined property and turns a Date into its ISO string and NaN into null
 * before the server stores anything, so those are no difference. A field left out (or undefined) was not sent,
 * so it is not listed. The title is compared trimmed, as the server trims it. Pure.
 */
export function notAppliedFields(input: CreateTicketInput, ticket: Ticket): NotAppliedField[] {
  const sent = (value: unknown): unknown => {
    const json = JSON.stringify(value);
    return json === undefined ? undefined : (JSON.parse(json) as unknown);
  };
  const differs = (value: unknown, stored: unknown): boolean => {
    const wire = sent(value);
    return wire !== undefined && !sameJson(wire, stored);
  };
  const title = sent(input.title);
  const differing: (NotAppliedField | false)[] = [
    typeof title === 'string' && title.trim() !== ticket.title && 'title',
    differs(input.description, ticket.description) && 'description',
    differs(input.priority, ticket.priority) && 'priority',
    differs(input.requester, ticket.requester) && 'requester',
    differs(input.metadata, ticket.metadata) && 'metadata',
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
