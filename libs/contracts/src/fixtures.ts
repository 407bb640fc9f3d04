// Valid ticket events and the Kafka messages the service publishes for them, for a consumer's own tests: produce
// them into a test topic and the handler sees what it will see in production (the same envelope, key and headers).
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { EVENT_HEADERS, TicketCancelledV1, TicketCreatedV1, type TicketEvent } from './events';
import type { Ticket } from './ticket';

/** What a test may set; everything else gets a valid value (fresh UUIDs, the current time). */
export interface TicketEventFields {
  /** The event id, the consumers' dedup key (default: a fresh UUID). */
  id?: string;
  tenantId?: string;
  ticketId?: string;
  /** ISO-8601 instant (default: now). */
  occurredAt?: string;
  idempotencyKey?: string;
  correlationId?: string;
  /** Fields of the ticket; `id` is always the ticketId. */
  data?: Partial<Omit<Ticket, 'id'>>;
}

/**
 * A `ticket.created.v1` event as the service publishes it, parsed with `TicketCreatedV1` (so an invalid field set
 * here throws at once, naming it, instead of reaching the consumer as a dead letter).
 */
export function ticketCreatedEvent(fields: TicketEventFields = {}): TicketCreatedV1 {
  const ticketId = fields.ticketId ?? randomUUID();
  const at = fields.occurredAt ?? new Date().toISOString();
  return valid('ticketCreatedEvent', TicketCreatedV1, {
    id: fields.id ?? randomUUID(),
    type: 'ticket.created.v1',
    occurredAt: at,
    tenantId: fields.tenantId ?? randomUUID(),
    ticketId,
    idempotencyKey: fields.idempotencyKey ?? `test-${randomUUID()}`,
    ...(fields.correlationId !== undefined ? { correlationId: fields.correlationId } : {}),
    data: {
      title: 'Printer on fire',
      description: null,
      priority: 'normal',
      status: 'open',
      externalRef: null,
      requester: null,
      metadata: null,
      createdAt: at,
      updatedAt: at,
      ...fields.data,
      id: ticketId,
    },
  });
}

/**
 * The `ticket.cancelled.v1` event that follows `created`: the same tenant and ticket, a new event id, the ticket
 * cancelled. `fields` override as in `ticketCreatedEvent`.
 */
export function ticketCancelledEvent(
  created: TicketCreatedV1,
  fields: Omit<TicketEventFields, 'tenantId' | 'ticketId'> = {},
): TicketCancelledV1 {
  const at = fields.occurredAt ?? new Date().toISOString();
  return valid('ticketCancelledEvent', TicketCancelledV1, {
    id: fields.id ?? randomUUID(),
    type: 'ticket.cancelled.v1',
    occurredAt: at,
    tenantId: created.tenantId,
    ticketId: created.ticketId,
    idempotencyKey: fields.idempotencyKey ?? `test-${randomUUID()}`,
    ...(fields.correlationId !== undefined ? { correlationId: fields.correlationId } : {}),
    data: { ...created.data, status: 'cancelled', updatedAt: at, ...fields.data, id: created.ticketId },
  });
}

/** A Kafka message as the service's relay publishes it (kafkajs's `Message` shape, and most clients'). */
export interface TicketEventMessage {
  /** The ticket id: one ticket's events share a partition and keep their order. */
  key: string;
  /** The envelope as JSON text. */
  value: string;
  /**
   * `event-id` and `event-type` always; `correlation-id` when the event has one. The service also sends the
   * request's `traceparent`; a test has no trace to continue, so it is left out.
   */
  headers: Record<string, string>;
}

/** The message the service publishes for `event`: `producer.send({ topic, messages: [ticketEventMessage(e)] })`. */
export function ticketEventMessage(event: TicketEvent): TicketEventMessage {
  const headers: Record<string, string> = { [EVENT_HEADERS.id]: event.id, [EVENT_HEADERS.type]: event.type };
  if (event.correlationId) headers[EVENT_HEADERS.correlationId] = event.correlationId;
  return { key: event.ticketId, value: JSON.stringify(event), headers };
}

/** `value` parsed by `schema`, or an error that names each field refused, in one readable line each. */
function valid<S extends z.ZodType>(fn: string, schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`${fn}: not a valid event:\n${z.prettifyError(r.error)}`);
  return r.data;
}
