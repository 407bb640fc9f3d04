import { randomUUID } from 'node:crypto';
import { parseTicketEventMessage, storableText } from './message-parser';

const now = new Date().toISOString();
const ticketId = randomUUID();
const event = {
  id: randomUUID(),
  type: 'ticket.created.v1',
  occurredAt: now,
  tenantId: randomUUID(),
  ticketId,
  idempotencyKey: 'k-1',
  data: {
    id: ticketId,
    title: 'Printer on fire',
    description: null,
    priority: 'high',
    status: 'open',
    externalRef: null,
    requester: null,
    metadata: null,
    createdAt: now,
    updatedAt: now,
  },
};
const msg = (value: Buffer | null, offset = '7') => ({ offset, key: Buffer.from('k'), value, headers: { 'event-id': Buffer.from('x') } });

describe('parseTicketEventMessage', () => {
  it('accepts a valid envelope', () => {
    const value = Buffer.from(JSON.stringify(event));
    const r = parseTicketEventMessage(msg(value));
    expect(r).toEqual({ ok: true, offset: '7', event, value });
  });

  it('dead-letters text that is not JSON, keeping key, value and headers', () => {
    const r = parseTicketEventMessage(msg(Buffer.from('hello {')));
    expect(r).toMatchObject({ ok: false, key: 'k', value: 'hello {', headers: { 'event-id': 'x' } });
    expect(r.ok === false && r.reason).toMatch(/^not JSON/);
  });

  it('dead-letters JSON that fails the schema, naming the fields', () => {
    const r = parseTicketEventMessage(msg(Buffer.from(JSON.stringify({ ...event, tenantId: 'nope' }))));
    expect(r.ok === false && r.reason).toMatch(/^not a TicketEvent: tenantId/);
  });

  it('dead-letters empty values, non-UTF-8 bytes and NUL characters', () => {
    expect(parseTicketEventMessage(msg(null)).ok).toBe(false);
    const binary = parseTicketEventMessage(msg(Buffer.from([0xff, 0xfe, 0x00])));
    expect(binary).toMatchObject({ ok: false, value: 'base64://4A' });
    const nul = JSON.stringify({ ...event, data: { ...event.data, title: 'a\u0000b' } });
    expect(parseTicketEventMessage(msg(Buffer.from(nul)))).toMatchObject({ ok: false, reason: expect.stringMatching(/NUL/) });
  });

  it('does not mistake an escaped backslash followed by u0000 for a NUL', () => {
    const text = JSON.stringify({ ...event, data: { ...event.data, title: 'C:\\u0000dir' } });
    expect(parseTicketEventMessage(msg(Buffer.from(text))).ok).toBe(true);
  });
});

describe('storableText', () => {
  it('keeps UTF-8 and base64-encodes the rest', () => {
    expect(storableText('héllo')).toBe('héllo');
    expect(storableText(Buffer.from([0x61, 0x00]))).toBe('base64:YQA=');
    expect(storableText(null)).toBeNull();
  });
});
