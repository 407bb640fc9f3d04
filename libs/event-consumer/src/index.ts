// @tickets/event-consumer: consume ticket events in a Nest service with inbox dedup in the handler's
// transaction, offsets committed after it, poison handling and metrics. See docs/consuming.md.
// Maintenance (migrate, replay, dead letters): '@tickets/event-consumer/admin' and the `ticket-events` bin.
// Test hooks: '@tickets/event-consumer/testing'.
export { TicketEventsServer } from './ticket-events.server';
export { TicketEventsOptionsError, type TicketEventsOptions } from './ticket-events.options';
export type { KitLogger, KitLogFn } from './kit-logger';
export { OnTicketEvent, OnTicketEventBatch, TICKET_EVENTS_TRANSPORT, type BatchHandlerOptions } from './decorators';
export { TicketEventContext, TicketEventBatchContext, type OwnInboxResult } from './event-context';
export type { InvalidMessage } from './envelope-parser';
export type { WarmFailure } from './warm-connections.repository';
export { KitSchemaOutdated } from './kit-schema.repository';
export { KitDatabaseUnavailable } from './database-errors';
export { MetricsPortError } from './metrics-endpoint';
// Binary array parameters for a handler's bulk statements (`unnest($1::uuid[], ...)` over a whole batch).
export { uuidArray, textArray, int8Array, int4Array, boolArray } from './pg-binary';
// Nest's parameter decorators, so that a consumer needs no other import for its handlers.
export { Ctx, Payload } from '@nestjs/microservices';
// The event types of the shared contracts, as handlers receive them.
export type { TicketEvent, TicketCreatedV1, TicketCancelledV1, EventType } from '@tickets/contracts';
