import { isUtf8 } from 'node:buffer';
import { safeParseJson, TicketEvent } from '@tickets/contracts';

const BASE64 = 'base64:';

/**
 * The bytes of a value stored by the kit in consumer_dead_letters (key, value, header values):
 * UTF-8 text, or `base64:<...>` when the bytes were not storable as text or were a text beginning with
 * "base64:" (encoded since 2026-12-06; a row stored before then with such a text reads as encoded).
 */
export function storedBytes(stored: string | null): Buffer | null {
  if (stored === null) return null;
  return stored.startsWith(BASE64) ? Buffer.from(stored.slice(BASE64.length), 'base64') : Buffer.from(stored, 'utf8');
}

/**
 * Why the consumer would dead-letter these bytes again, or null when they are a valid TicketEvent
 * now (the shared contract in @tickets/contracts is the one the consumer parses with). Only the
 * outcome matters here: the consumer's own parser gives the reason it stores.
 */
export function stillInvalid(value: Buffer | null): string | null {
  if (!value || value.length === 0) return 'empty value';
  if (!isUtf8(value) || value.includes(0)) return 'not UTF-8 text without NUL bytes';
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (JSON.stringify(json).includes('\\u0000')) return 'holds a NUL character';
  const parsed = safeParseJson(TicketEvent, json);
  return parsed.success
    ? null
    : `not a TicketEvent (${parsed.error.issues[0]?.path.join('.') || 'root'}: ${parsed.error.issues[0]?.message})`;
}

/** The event id of a valid TicketEvent message (for the audit), else null. */
export function eventIdOf(value: Buffer | null): string | null {
  if (!value || stillInvalid(value)) return null;
  return (JSON.parse(value.toString('utf8')) as { id: string }).id;
}
