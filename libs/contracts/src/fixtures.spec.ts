import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isTicketEvent } from './envelope-check';
import { EVENT_HEADERS, TicketEvent } from './events';
import { ticketCancelledEvent, ticketCreatedEvent, ticketEventMessage } from './fixtures';

const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(join(__dirname, '..', 'ticket-event.schema.json'), 'utf8')));

describe('test events for a consumer of the topic', () => {
  it('makes valid events by default, by the zod schema, the envelope check and the shipped JSON Schema', () => {
    const created = ticketCreatedEvent();
    const cancelled = ticketCancelledEvent(created);
    for (const e of [created, cancelled]) {
      expect(TicketEvent.safeParse(e).success).toBe(true);
      expect(isTicketEvent(JSON.parse(JSON.stringify(e)))).toBe(true);
      expect(validate(e)).toBe(true);
    }
    expect(ticketCreatedEvent().id).not.toBe(created.id);
  });

  it('applies what the test sets; the ticket id is always the envelope ticketId', () => {
    const e = ticketCreatedEvent({
      tenantId: '1b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d02',
      ticketId: '2b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d03',
      correlationId: 'req-1',
      data: { title: 'Paper jam', priority: 'urgent', externalRef: 'INC-7' },
    });
    expect(e).toMatchObject({
      type: 'ticket.created.v1',
      tenantId: '1b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d02',
      ticketId: '2b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d03',
      correlationId: 'req-1',
      data: {
        id: '2b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d03',
        title: 'Paper jam',
        priority: 'urgent',
        externalRef: 'INC-7',
      },
    });
    const c = ticketCancelledEvent(e, { occurredAt: '2026-12-08T09:00:00.000Z' });
    expect(c).toMatchObject({
      type: 'ticket.cancelled.v1',
      tenantId: e.tenantId,
      ticketId: e.ticketId,
      occurredAt: '2026-12-08T09:00:00.000Z',
      data: { id: e.ticketId, title: 'Paper jam', status: 'cancelled', updatedAt: '2026-12-08T09:00:00.000Z' },
    });
    expect(c.id).not.toBe(e.id);
  });

  it('refuses an invalid field at once, naming it', () => {
    expect(() => ticketCreatedEvent({ ticketId: 'not-a-uuid' })).toThrow(
      /^ticketCreatedEvent: not a valid event:\n.*Invalid UUID\n +→ at ticketId/,
    );
    expect(() => ticketCreatedEvent({ data: { priority: 'soon' as never } })).toThrow(/priority/);
  });

  it('gives the message the relay publishes: key = ticket id, the envelope as JSON, its id and type in headers', () => {
    const e = ticketCreatedEvent({ correlationId: 'req-2' });
    expect(ticketEventMessage(e)).toEqual({
      key: e.ticketId,
      value: JSON.stringify(e),
      headers: {
        [EVENT_HEADERS.id]: e.id,
        [EVENT_HEADERS.type]: 'ticket.created.v1',
        [EVENT_HEADERS.correlationId]: 'req-2',
      },
    });
    expect(ticketEventMessage(ticketCreatedEvent()).headers).not.toHaveProperty(EVENT_HEADERS.correlationId);
  });
});
