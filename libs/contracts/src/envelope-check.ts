import { z } from 'zod';
import { PRIORITIES, STATUSES } from './ticket';
import { EVENT_TYPES, type TicketEvent } from './events';

// zod's own patterns for `z.uuid()` and `z.iso.datetime()` (no offset, no local time, any precision).
const UUID = z.regexes.uuid();
const DATETIME = z.regexes.datetime({ precision: null, offset: false, local: false });
// zod's own count of a string's length for `.min()` / `.max()`: code points, not UTF-16 units.
const { codePointLength } = z.core.util;
const TYPES = new Set<unknown>(EVENT_TYPES);
const PRIORITY = new Set<unknown>(PRIORITIES);
const STATUS = new Set<unknown>(STATUSES);

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUuid = (v: unknown): boolean => typeof v === 'string' && UUID.test(v);
const isDatetime = (v: unknown): boolean => typeof v === 'string' && DATETIME.test(v);
const isStringOrNull = (v: unknown): boolean => v === null || typeof v === 'string';
const isOptionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';

/**
 * Whether `TicketEvent.safeParse(value)` would succeed, for a value JSON.parse produced, without the copy
 * zod builds of its output; false where that throws (see safeParseJson). For the relay's check of every
 * claimed row, where only the verdict is used: JSON.parse and this check cost about 0.7× JSON.parse and
 * zod per envelope (`npm run bench:envelope-check`). A failing value goes to zod for its issues. The unit
 * spec compares both verdicts over every field's mutations, so a change of the schema or of zod that this
 * check does not follow fails there.
 */
export function isTicketEvent(value: unknown): value is TicketEvent {
  if (!isObject(value)) return false;
  const { id, type, occurredAt, tenantId, ticketId, idempotencyKey, correlationId, data } = value;
  if (!TYPES.has(type) || !isUuid(id) || !isDatetime(occurredAt) || !isUuid(tenantId) || !isUuid(ticketId)) {
    return false;
  }
  // `.min(1).max(255)`: units / 2 <= code points <= units, so only a key over 255 units needs the count.
  if (typeof idempotencyKey !== 'string' || idempotencyKey.length < 1) return false;
  if (idempotencyKey.length > 255 && codePointLength(idempotencyKey) > 255) return false;
  return isOptionalString(correlationId) && isTicket(data);
}

function isTicket(t: unknown): boolean {
  if (!isObject(t)) return false;
  const { requester, metadata } = t;
  return (
    isUuid(t.id) &&
    typeof t.title === 'string' &&
    isStringOrNull(t.description) &&
    PRIORITY.has(t.priority) &&
    STATUS.has(t.status) &&
    isStringOrNull(t.externalRef) &&
    (requester === null ||
      (isObject(requester) && isOptionalString(requester.name) && isOptionalString(requester.email))) &&
    (metadata === null || isObject(metadata)) &&
    isDatetime(t.createdAt) &&
    isDatetime(t.updatedAt)
  );
}
