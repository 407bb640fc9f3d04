import { z } from 'zod';
import { Ticket } from './ticket';

export const TICKET_CREATED_V1 = 'ticket.created.v1';
export const TICKET_CANCELLED_V1 = 'ticket.cancelled.v1';
export const EVENT_TYPES = [TICKET_CREATED_V1, TICKET_CANCELLED_V1] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const envelope = <T extends EventType>(type: T) =>
  z.object({
    /** Event id: the dedup key for every consumer. Stable across relay retries and topic replays. */
    id: z.uuid(),
    type: z.literal(type),
    occurredAt: z.iso.datetime(),
    tenantId: z.uuid(),
    ticketId: z.uuid(),
    /** The idempotency key of the request that caused the event. */
    idempotencyKey: z.string().min(1).max(255),
    /** Correlation id of that request (also in the `traceparent` header). */
    correlationId: z.string().optional(),
    data: Ticket,
  });

export const TicketCreatedV1 = envelope(TICKET_CREATED_V1);
export const TicketCancelledV1 = envelope(TICKET_CANCELLED_V1);
export const TicketEvent = z.discriminatedUnion('type', [TicketCreatedV1, TicketCancelledV1]);
export type TicketCreatedV1 = z.infer<typeof TicketCreatedV1>;
export type TicketCancelledV1 = z.infer<typeof TicketCancelledV1>;
export type TicketEvent = z.infer<typeof TicketEvent>;

/** Kafka header names every ticket event carries. */
export const EVENT_HEADERS = {
  id: 'event-id',
  type: 'event-type',
  traceparent: 'traceparent',
  correlationId: 'correlation-id',
} as const;
