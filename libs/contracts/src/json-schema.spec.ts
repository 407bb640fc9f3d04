import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isTicketEvent } from './envelope-check';
import { ticketEventJsonSchema } from './json-schema';

const shipped = JSON.parse(readFileSync(join(__dirname, '..', 'ticket-event.schema.json'), 'utf8'));
const event = {
  id: '0b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d01',
  type: 'ticket.created.v1',
  occurredAt: '2026-12-01T10:00:00.000Z',
  tenantId: '1b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d02',
  ticketId: '2b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d03',
  idempotencyKey: 'intent-1',
  data: {
    id: '2b6f1c1e-8a34-4b8e-9d3c-2f1a5e7c9d03',
    title: 'Printer on fire',
    description: null,
    priority: 'high',
    status: 'open',
    externalRef: null,
    requester: null,
    metadata: null,
    createdAt: '2026-12-01T10:00:00.000Z',
    updatedAt: '2026-12-01T10:00:00.000Z',
  },
};

describe('the envelope JSON Schema shipped in @tickets/contracts', () => {
  it('is what the zod schema produces (regenerate: npm run contracts:schema)', () => {
    expect(shipped).toEqual(ticketEventJsonSchema());
  });

  it('accepts a ticket event and rejects one without an id or with a type it does not know', () => {
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const validate = ajv.compile(shipped);
    expect(validate(event)).toBe(true);
    const { id: _id, ...noId } = event;
    expect(validate(noId)).toBe(false);
    expect(validate({ ...event, type: 'ticket.archived.v9' })).toBe(false);
  });

  it('accepts fields it does not name, in the envelope and in its data, as the zod schema does', () => {
    // New optional fields may be added without a version change (docs/asyncapi.yaml): a consumer validating
    // with the shipped schema must not refuse an event for them.
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const validate = ajv.compile(shipped);
    const later = {
      ...event,
      schemaHint: 'added later',
      data: { ...event.data, dueAt: '2026-12-09T10:00:00.000Z', requester: { name: 'Ann', team: 'ops' } },
    };
    expect(validate(later)).toBe(true);
    expect(isTicketEvent(later)).toBe(true);
  });
});
