export { CreateTicketInput, CancelTicketInput, Ticket, PRIORITIES, STATUSES } from './ticket';
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
