import { randomUUID } from 'node:crypto';
import { isTicketEvent, ticketCreatedEvent, ticketEventMessage } from '@tickets/contracts';
import { buildOutboundMessage, chunkMessages, type OutboundMessage, type OutboxRow } from './outbox-message';

// The contracts as they are, except that a test can make isTicketEvent refuse every envelope: the case where
// the check and zod disagree, which the check's differential spec keeps from happening.
let mockRefuseEveryEnvelope = false;
jest.mock('@tickets/contracts', () => {
  const actual = jest.requireActual<typeof import('@tickets/contracts')>('@tickets/contracts');
  return { ...actual, isTicketEvent: jest.fn((v: unknown) => !mockRefuseEveryEnvelope && actual.isTicketEvent(v)) };
});
afterEach(() => {
  mockRefuseEveryEnvelope = false;
  jest.mocked(isTicketEvent).mockClear();
});

function row(overrides: Partial<OutboxRow> = {}, envelope: Record<string, unknown> = {}): OutboxRow {
  const event = ticketCreatedEvent({ idempotencyKey: 'k-1', correlationId: 'c-1', data: { title: 't' } });
  const eventId = event.id;
  const ticketId = event.ticketId;
  const payload = { ...event, futureField: 'kept', ...envelope };
  return {
    seq: '1',
    eventId,
    aggregateId: ticketId,
    eventType: 'ticket.created.v1',
    payload: JSON.stringify(payload),
    headers: {},
    attempts: 0,
    ...overrides,
  };
}

describe('buildOutboundMessage', () => {
  it("sends what the contracts' ticketEventMessage gives for the same event (the test events downstream teams produce)", () => {
    const event = ticketCreatedEvent({ correlationId: 'c-9' });
    const built = buildOutboundMessage({
      seq: '1',
      eventId: event.id,
      aggregateId: event.ticketId,
      eventType: event.type,
      payload: JSON.stringify(event),
      headers: { 'correlation-id': 'c-9' },
      attempts: 0,
    });
    if (!built.ok) throw new Error(built.reason);
    expect(built.value.message).toEqual(ticketEventMessage(event));
  });

  it('keys by ticket id, sends the stored text verbatim and copies only the event headers', () => {
    const r = row({ headers: { traceparent: '00-abc-def-01', 'correlation-id': 'c-1', authorization: 'nope', n: 1 } });
    const built = buildOutboundMessage(r);
    if (!built.ok) throw new Error(built.reason);
    expect(built.value.message).toEqual({
      key: r.aggregateId,
      value: r.payload,
      headers: {
        'event-id': r.eventId,
        'event-type': 'ticket.created.v1',
        traceparent: '00-abc-def-01',
        'correlation-id': 'c-1',
      },
    });
    expect(built.value.bytes).toBeGreaterThan(r.payload.length);
  });

  it('rejects an envelope that fails the contract', () => {
    const built = buildOutboundMessage(row({}, { occurredAt: 'yesterday' }));
    expect(built).toEqual({ ok: false, reason: expect.stringMatching(/^invalid_envelope: occurredAt/) });
  });

  it('rejects, without throwing, an envelope on which zod 4.6 throws (an object whose length is not a number)', () => {
    const built = buildOutboundMessage(row({}, { idempotencyKey: { length: { toString: 0 } } }));
    expect(built).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^invalid_envelope: idempotencyKey: Invalid input: expected string, received object/,
      ),
    });
  });

  it("lets zod's verdict stand where the check refuses an envelope zod accepts", () => {
    mockRefuseEveryEnvelope = true;
    const r = row();
    const built = buildOutboundMessage(r);
    expect(isTicketEvent).toHaveBeenCalledTimes(1);
    if (!built.ok) throw new Error(built.reason);
    expect(built.value.message.value).toBe(r.payload);
    // and an envelope both refuse is still refused, with zod's issues
    expect(buildOutboundMessage(row({}, { occurredAt: 'yesterday' }))).toEqual({
      ok: false,
      reason: expect.stringMatching(/^invalid_envelope: occurredAt/),
    });
  });

  it('rejects an envelope that disagrees with its row (key and headers come from the row)', () => {
    const r = row();
    expect(buildOutboundMessage({ ...r, aggregateId: randomUUID() })).toEqual({
      ok: false,
      reason: 'invalid_envelope: ticketId != aggregate_id',
    });
    expect(buildOutboundMessage({ ...r, eventType: 'ticket.cancelled.v1' })).toEqual({
      ok: false,
      reason: 'invalid_envelope: type != event_type',
    });
  });
});

describe('chunkMessages', () => {
  const m = (bytes: number, seq: number) => ({ bytes, row: { seq: String(seq) } }) as unknown as OutboundMessage;
  const seqs = (chunks: OutboundMessage[][]) => chunks.map((c) => c.map((x) => Number(x.row.seq)));

  it('keeps seq order and caps each send by count and bytes', () => {
    expect(seqs(chunkMessages([m(10, 1), m(10, 2), m(10, 3), m(10, 4), m(10, 5)], 2, 1_000))).toEqual([
      [1, 2],
      [3, 4],
      [5],
    ]);
    expect(seqs(chunkMessages([m(400, 1), m(400, 2), m(400, 3)], 10, 1_000))).toEqual([[1, 2], [3]]);
  });

  it('sends an oversized message alone', () => {
    expect(seqs(chunkMessages([m(10, 1), m(5_000, 2), m(10, 3)], 10, 1_000))).toEqual([[1], [2], [3]]);
  });
});
