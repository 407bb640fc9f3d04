import { randomUUID } from 'node:crypto';
import { storedBytes } from './dead-letters/raw-message';
import { parseEnvelope } from './envelope-parser';

const created = () => {
  const now = new Date().toISOString();
  const ticketId = randomUUID();
  return {
    id: randomUUID(),
    type: 'ticket.created.v1',
    occurredAt: now,
    tenantId: randomUUID(),
    ticketId,
    idempotencyKey: 'k-1',
    data: {
      id: ticketId,
      title: 'x',
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
};
const msg = (value: string | Buffer | null) => ({
  offset: '7',
  key: Buffer.from('k'),
  value: typeof value === 'string' ? Buffer.from(value) : value,
  headers: { 'event-type': Buffer.from('x') },
});

describe('parseEnvelope', () => {
  it('accepts a valid envelope of the shared contracts', () => {
    const e = created();
    const p = parseEnvelope(msg(JSON.stringify(e)));
    expect(p).toMatchObject({ kind: 'event', offset: '7', event: { id: e.id, type: 'ticket.created.v1' } });
  });

  it("keeps a message's traceparent only when it is a W3C traceparent (a bad one would break the inbox statement or the webhook request)", () => {
    const good = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const withHeader = (tp: string) => ({
      ...msg(JSON.stringify(created())),
      headers: { traceparent: Buffer.from(tp) },
    });
    expect(parseEnvelope(withHeader(good))).toMatchObject({ kind: 'event', traceparent: good });
    for (const bad of [
      'garbage',
      `${good}\u0000`,
      `${good}\r\nx-evil: 1`,
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    ]) {
      const p = parseEnvelope(withHeader(bad));
      expect(p.kind).toBe('event');
      expect(p.kind === 'event' && p.traceparent).toBeUndefined();
    }
  });

  it('skips a well-formed envelope of a type or version it does not know', () => {
    expect(parseEnvelope(msg(JSON.stringify({ ...created(), type: 'ticket.archived.v9' })))).toEqual({
      kind: 'unknown',
      offset: '7',
      type: 'ticket.archived.v9',
    });
    expect(parseEnvelope(msg(JSON.stringify({ ...created(), type: 'ticket.created.v2', data: 1 })))).toMatchObject({
      kind: 'unknown',
      type: 'ticket.created.v2',
    });
  });

  it('marks a known type that breaks its schema as invalid, with the issues', () => {
    const p = parseEnvelope(msg(JSON.stringify({ ...created(), tenantId: 'nope' })));
    expect(p).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/^not a TicketEvent: tenantId/) });
  });

  it.each([
    ['not JSON', 'this is not JSON', /^not JSON/],
    ['empty', '', /^empty value/],
    ['no type', JSON.stringify({ hello: 1 }), /^not a TicketEvent/],
    ['a type that is not an event name', JSON.stringify({ ...created(), type: 'DROP TABLE' }), /^not a TicketEvent/],
    ['an escaped NUL', JSON.stringify({ ...created(), idempotencyKey: 'a\u0000b' }), /NUL/],
    // zod 4.6's safeParse throws on it: its length checks compare the object's length with a number.
    [
      'an object whose length is not a number where text belongs',
      JSON.stringify({ ...created(), idempotencyKey: { length: { toString: 0 } } }),
      /^not a TicketEvent: idempotencyKey: Invalid input: expected string, received object/,
    ],
  ])('dead-letters %s', (_name, value, reason) => {
    expect(parseEnvelope(msg(value))).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(reason),
      key: 'k',
      headers: { 'event-type': 'x' },
    });
  });

  it('gives a reason PostgreSQL can store when it quotes the message (V8 cuts its quote inside a surrogate pair)', () => {
    const p = parseEnvelope(msg(`x${'\ud83d\udd25'.repeat(40)}`));
    expect(p).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/^not JSON: /) });
    expect((p as Extract<typeof p, { kind: 'invalid' }>).reason).not.toMatch(/\p{Cs}/u);
  });

  it('stores a text that begins with base64: encoded, so that it reads back as the same bytes', () => {
    const value = 'base64:not an envelope';
    const p = parseEnvelope({ ...msg(value), headers: { note: 'base64:aGk=' } });
    expect(p.kind).toBe('invalid');
    const stored = p as Extract<typeof p, { kind: 'invalid' }>;
    expect(storedBytes(stored.value)?.toString('utf8')).toBe(value);
    expect(storedBytes(stored.headers.note)?.toString('utf8')).toBe('base64:aGk=');
  });

  it('keeps bytes that are not UTF-8 as base64', () => {
    const p = parseEnvelope(msg(Buffer.from([0xff, 0xfe, 0x00])));
    expect(p).toMatchObject({ kind: 'invalid', reason: 'value is not valid UTF-8', value: 'base64://4A' });
  });
});
