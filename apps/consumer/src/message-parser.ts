import { isUtf8 } from 'node:buffer';
import { TicketEvent } from '@tickets/contracts';

/** The parts of a Kafka message the parser reads (kafkajs' KafkaMessage satisfies it). */
export interface RawMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

export type ParsedMessage =
  /** `value`: the message bytes as read (valid UTF-8 JSON, no NUL): stored as the notification's payload. */
  | { ok: true; offset: string; event: TicketEvent; value: Buffer }
  | { ok: false; offset: string; reason: string; key: string | null; value: string | null; headers: Record<string, string> };

// An escaped NUL (\u0000) not itself preceded by an escaping backslash.
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/**
 * JSON + the shared zod schema. A failure is permanent (the same bytes fail again), so the message is
 * dead-lettered, never retried. NUL characters are rejected here because PostgreSQL text/jsonb cannot
 * store them: accepting one would make the inbox statement fail on every redelivery.
 */
export function parseTicketEventMessage(message: RawMessage): ParsedMessage {
  const invalid = (reason: string): ParsedMessage => ({
    ok: false,
    offset: message.offset,
    reason,
    key: storableText(message.key),
    value: storableText(message.value),
    headers: storableHeaders(message.headers),
  });
  if (!message.value || message.value.length === 0) return invalid('empty value (tombstone or empty message)');
  if (!isUtf8(message.value)) return invalid('value is not valid UTF-8');
  const text = message.value.toString('utf8');
  if (text.includes('\u0000') || (text.includes('u0000') && ESCAPED_NUL.test(text))) {
    return invalid('value contains a NUL character (U+0000), which PostgreSQL cannot store');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return invalid(`not JSON: ${(e as Error).message}`);
  }
  const parsed = TicketEvent.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return invalid(`not a TicketEvent: ${issues.join('; ')}${parsed.error.issues.length > 5 ? '; ...' : ''}`);
  }
  return { ok: true, offset: message.offset, event: parsed.data, value: message.value };
}

/** UTF-8 text, or `base64:<...>` when the bytes are not UTF-8 or hold a NUL (not storable as text). */
export function storableText(value: Buffer | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const buf = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  if (isUtf8(buf) && !buf.includes(0)) return buf.toString('utf8');
  return `base64:${buf.toString('base64')}`;
}

function storableHeaders(headers: RawMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    out[storableText(name) ?? name] = values.map((x) => storableText(x) ?? '').join(', ');
  }
  return out;
}
