import { randomUUID } from 'node:crypto';
import { ticketCreated } from '../../../../test/support/events-factory';
import { eventIdOf, stillInvalid, storedBytes } from './raw-message';

const event = ticketCreated(randomUUID());

describe('storedBytes', () => {
  it("decodes the consumer's storage format: UTF-8 text, or base64:<...>", () => {
    expect(storedBytes(null)).toBeNull();
    expect(storedBytes('héllo')).toEqual(Buffer.from('héllo', 'utf8'));
    expect(storedBytes(`base64:${Buffer.from([0xff, 0x00, 0x01]).toString('base64')}`)).toEqual(
      Buffer.from([0xff, 0x00, 0x01]),
    );
  });
});

describe('stillInvalid', () => {
  it('null for a valid TicketEvent, with its event id', () => {
    const bytes = Buffer.from(JSON.stringify(event));
    expect(stillInvalid(bytes)).toBeNull();
    expect(eventIdOf(bytes)).toBe(event.id);
  });

  it.each([
    [null, 'empty value'],
    [Buffer.alloc(0), 'empty value'],
    [Buffer.from([0xff, 0xfe]), 'not UTF-8 text without NUL bytes'],
    [Buffer.from('{"a":1'), 'not JSON'],
    [Buffer.from([0x7b, 0x00, 0x7d]), 'not UTF-8 text without NUL bytes'],
    // JSON.stringify writes a NUL as the escape \u0000: valid JSON text, but PostgreSQL cannot store it.
    [Buffer.from(JSON.stringify({ ...event, data: { ...event.data, title: 'a\u0000b' } })), 'holds a NUL character'],
  ])('%j: %s', (value, reason) => {
    expect(stillInvalid(value)).toBe(reason);
    expect(eventIdOf(value)).toBeNull();
  });

  it('names the field of an object whose length is not a number (zod 4.6 throws on it)', () => {
    const value = Buffer.from(JSON.stringify({ ...event, idempotencyKey: { length: { toString: 0 } } }));
    expect(stillInvalid(value)).toBe(
      'not a TicketEvent (idempotencyKey: Invalid input: expected string, received object)',
    );
  });

  it('names the first schema problem', () => {
    expect(stillInvalid(Buffer.from(JSON.stringify({ ...event, type: 'ticket.exploded.v1' })))).toMatch(
      /^not a TicketEvent \(/,
    );
  });
});
