import { isUtf8 } from 'node:buffer';
import { EVENT_TYPES, safeParseJson, storableText, TicketEvent } from '@tickets/contracts';
import { wellFormedTraceparent } from './tracing';

/** The parts of a Kafka message the kit reads (kafkajs' KafkaMessage satisfies it). */
export interface RawMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

/** A message that cannot be an event of ours, as stored in consumer_dead_letters. */
export interface InvalidMessage {
  offset: string;
  reason: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

export type ParsedEnvelope =
  /**
   * `traceparent`: the message's header, the trace of the request that caused the event (if any).
   * `headers`: the message's headers as read, for a dead letter of the event (storableHeaders), so that a
   * requeue produces them again.
   */
  | {
      kind: 'event';
      offset: string;
      event: TicketEvent;
      value: Buffer;
      traceparent?: string;
      headers?: RawMessage['headers'];
    }
  /** A well-formed envelope of a type or version this build does not know: skipped, not an error. */
  | { kind: 'unknown'; offset: string; type: string }
  | ({ kind: 'invalid' } & InvalidMessage);

const KNOWN = new Set<string>(EVENT_TYPES);
/** The prefix of a stored value that holds base64 (dead-letters/raw-message.ts reads it back). */
const BASE64 = 'base64:';
// An escaped NUL (\u0000) not itself preceded by an escaping backslash: PostgreSQL text cannot hold it.
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/**
 * Bytes → a TicketEvent of the shared contracts. An envelope whose `type` is a string this build does
 * not know (a newer event, `ticket.archived.v9`) is `unknown` and skipped: producers may add types
 * before consumers learn them. Anything else that fails is `invalid`: permanent, dead-lettered once.
 */
export function parseEnvelope(message: RawMessage): ParsedEnvelope {
  // A reason may quote the message (V8's JSON.parse error cuts its quote inside a surrogate pair, a zod
  // issue names a key): made storable, or the dead letter's jsonb would refuse it.
  const invalid = (reason: string): ParsedEnvelope => ({
    kind: 'invalid',
    offset: message.offset,
    reason: storableText(reason, 2000),
    key: storable(message.key),
    value: storable(message.value),
    headers: storableHeaders(message.headers),
  });
  const bytes = message.value;
  if (!bytes || bytes.length === 0) return invalid('empty value (tombstone or empty message)');
  if (!isUtf8(bytes)) return invalid('value is not valid UTF-8');
  const text = bytes.toString('utf8');
  if (text.includes('\u0000') || (text.includes('u0000') && ESCAPED_NUL.test(text))) {
    return invalid('value contains a NUL character (U+0000), which PostgreSQL cannot store');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return invalid(`not JSON: ${(e as Error).message}`);
  }
  const type = (json as { type?: unknown } | null)?.type;
  if (typeof type === 'string' && /^[a-z][a-z0-9_.-]*\.v\d+$/.test(type) && !KNOWN.has(type)) {
    return { kind: 'unknown', offset: message.offset, type };
  }
  const parsed = safeParseJson(TicketEvent, json);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return invalid(`not a TicketEvent: ${issues.join('; ')}${parsed.error.issues.length > 5 ? '; ...' : ''}`);
  }
  return {
    kind: 'event',
    offset: message.offset,
    event: parsed.data,
    value: bytes,
    traceparent: wellFormedTraceparent(headerText(message.headers?.traceparent)),
    headers: message.headers,
  };
}

function headerText(v: NonNullable<RawMessage['headers']>[string]): string | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined ? undefined : first.toString();
}

/**
 * Text as it is; bytes that are not UTF-8 text without NUL as `base64:<...>`. A text that itself begins with
 * `base64:` is encoded too, or a requeue (storedBytes) would decode it into other bytes.
 */
function storable(value: Buffer | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const buf = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const text = isUtf8(buf) && !buf.includes(0) ? buf.toString('utf8') : undefined;
  return text !== undefined && !text.startsWith(BASE64) ? text : `${BASE64}${buf.toString('base64')}`;
}

/** Headers as consumer_dead_letters stores them: text, or `base64:` for bytes that are not UTF-8. */
export function storableHeaders(headers: RawMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    out[storable(name) ?? name] = (Array.isArray(v) ? v : [v]).map((x) => storable(x) ?? '').join(', ');
  }
  return out;
}
