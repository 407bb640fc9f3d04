// @tickets/event-consumer: consume ticket events in a Nest service with inbox dedup in the handler's
// transaction, offsets committed after it, poison handling and metrics. See docs/consuming.md.
export { TicketEventsServer } from './ticket-events.server';
export { ticketEventsOptions, type TicketEventsOptions } from './ticket-events.options';
export { OnTicketEvent, OnTicketEventBatch, TICKET_EVENTS_TRANSPORT, type BatchHandlerOptions } from './decorators';
export { TicketEventContext, TicketEventBatchContext, type OwnInboxResult } from './event-context';
export type { InvalidMessage } from './envelope-parser';
export { forgetGroupInbox } from './group-inbox';
// The replay command's side of a pause (libs/topic-replay), and the table's DDL for the kit's migrations.
export { GroupPauseRepository, type PauseClaim, type PauseState } from './group-pause.repository';
export { PAUSE_MIGRATION } from './pause.migration';
// Nest's parameter decorators, so that a consumer needs no other import for its handlers.
export { Ctx, Payload } from '@nestjs/microservices';
// The event types of the shared contracts, as handlers receive them.
export type { TicketEvent, TicketCreatedV1, TicketCancelledV1, EventType } from '@tickets/contracts';
