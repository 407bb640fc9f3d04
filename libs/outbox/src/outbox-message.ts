import type { Message } from 'kafkajs';
import { EVENT_HEADERS, isTicketEvent, safeParseJson, storableText, TicketEvent } from '@tickets/contracts';

/** An unpublished outbox row as the relay claims it (`payload` is the jsonb column as text). */
export interface OutboxRow {
  seq: string;
  eventId: string;
  aggregateId: string;
  eventType: string;
  payload: string;
  headers: unknown;
  attempts: number;
  /** Event id of an earlier dead letter of the same ticket: this row must follow it there. */
  blockedBy?: string | null;
  /** A queue entry whose outbox row is gone (deleted by hand): nothing to send; the relay drops the entry. */
  orphan?: boolean;
}

/** A row ready to send: the Kafka message and its approximate size on the wire. */
export interface OutboundMessage {
  row: OutboxRow;
  message: Message;
  bytes: number;
}

export type BuildResult = { ok: true; value: OutboundMessage } | { ok: false; reason: string };

/** Per-record overhead of the record batch format (varints, attributes, deltas), rounded up. */
const RECORD_OVERHEAD_BYTES = 64;
const COPIED_HEADERS = [EVENT_HEADERS.traceparent, EVENT_HEADERS.correlationId] as const;

/**
 * Turns an outbox row into the Kafka message: key = ticket id, value = the stored envelope text
 * (sent verbatim, so fields this relay does not know survive), headers event-id, event-type and the
 * row's traceparent / correlation-id. The envelope is re-validated against `TicketEvent` and must
 * agree with the row's columns, since the key and headers come from the columns: a row failing that
 * is poison (`ok: false`, never sent).
 */
export function buildOutboundMessage(row: OutboxRow): BuildResult {
  let json: unknown;
  try {
    json = JSON.parse(row.payload);
  } catch {
    return { ok: false, reason: 'invalid_envelope: payload is not JSON' };
  }
  // isTicketEvent is zod's verdict without zod's copy (its spec holds the two equal). zod runs only when the
  // check refuses, to name the issues; should the two ever differ there, zod's verdict stands.
  if (!isTicketEvent(json)) {
    const parsed = safeParseJson(TicketEvent, json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      return { ok: false, reason: storableText(`invalid_envelope: ${issues}`, 1000) };
    }
  }
  const event = json as TicketEvent;
  const mismatches = [
    event.id !== row.eventId && 'id != event_id',
    event.ticketId !== row.aggregateId && 'ticketId != aggregate_id',
    event.type !== row.eventType && 'type != event_type',
  ].filter(Boolean);
  if (mismatches.length > 0) return { ok: false, reason: `invalid_envelope: ${mismatches.join(', ')}` };

  const headers: Record<string, string> = { [EVENT_HEADERS.id]: row.eventId, [EVENT_HEADERS.type]: row.eventType };
  const stored = row.headers && typeof row.headers === 'object' ? (row.headers as Record<string, unknown>) : {};
  for (const name of COPIED_HEADERS) {
    const v = stored[name];
    if (typeof v === 'string' && v.length > 0) headers[name] = v;
  }
  let bytes = RECORD_OVERHEAD_BYTES + Buffer.byteLength(row.aggregateId) + Buffer.byteLength(row.payload);
  for (const [k, v] of Object.entries(headers)) bytes += Buffer.byteLength(k) + Buffer.byteLength(v) + 8;
  return { ok: true, value: { row, message: { key: row.aggregateId, value: row.payload, headers }, bytes } };
}

/**
 * Splits messages (in seq order) into sends of at most `maxCount` messages and `maxBytes` bytes.
 * A message larger than `maxBytes` travels alone, so that if the broker rejects it as too large
 * no other row shares the failed request (a shared request could be half-appended).
 */
export function chunkMessages(messages: OutboundMessage[], maxCount: number, maxBytes: number): OutboundMessage[][] {
  const chunks: OutboundMessage[][] = [];
  let cur: OutboundMessage[] = [];
  let curBytes = 0;
  for (const m of messages) {
    if (m.bytes > maxBytes) {
      if (cur.length) chunks.push(cur);
      chunks.push([m]);
      cur = [];
      curBytes = 0;
      continue;
    }
    if (cur.length >= maxCount || curBytes + m.bytes > maxBytes) {
      chunks.push(cur);
      cur = [];
      curBytes = 0;
    }
    cur.push(m);
    curBytes += m.bytes;
  }
  if (cur.length) chunks.push(cur);
  return chunks;
}
