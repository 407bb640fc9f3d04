export {
  CreateTicketInput,
  CancelTicketInput,
  ListTicketsQuery,
  Ticket,
  TicketIdParam,
  PRIORITIES,
  STATUSES,
} from './ticket';
export { INPUT_LIMITS, IsoInstant, SafeJsonObject, SafeText, storableText, unsafeTextReason } from './text-safety';
export {
  TicketCreatedV1,
  TicketCancelledV1,
  TicketEvent,
  EVENT_TYPES,
  EVENT_HEADERS,
  TICKET_CREATED_V1,
  TICKET_CANCELLED_V1,
} from './events';
export type { EventType } from './events';
export { ticketEventJsonSchema } from './json-schema';
export { isTicketEvent } from './envelope-check';
export { safeParseJson } from './safe-parse';
export { ticketCreatedEvent, ticketCancelledEvent, ticketEventMessage } from './fixtures';
export type { TicketEventFields, TicketEventMessage } from './fixtures';
