import 'reflect-metadata';
import { EventPattern, RpcException } from '@nestjs/microservices';
import type { EventType } from '@tickets/contracts';

/** The transport id handlers are registered under: only TicketEventsServer serves them. */
export const TICKET_EVENTS_TRANSPORT = Symbol('ticket-events');

/** The pattern a batch handler is registered under (one per application). */
export const TICKET_EVENTS_BATCH_PATTERN = 'ticket-events.batch';

export interface BatchHandlerOptions {
  /** Event types the handler is given (default: every type of @tickets/contracts). */
  types?: readonly EventType[];
  /**
   * 'kit' (default): the kit writes the inbox and the dead letters in the handler's transaction and
   * passes only events this group has not seen, holding back (dead-lettering as held) those whose ticket
   * has an event dead ahead of them. 'handler': the kit writes neither and holds nothing back; the
   * handler gets every valid event in offset order (copies of one event included) and the invalid
   * messages, and must record them atomically itself (one statement), returning what it did. For
   * consumers that fold inbox, effect and dead letters into one statement.
   */
  inbox?: 'kit' | 'handler';
}

/** Extras stored on a handler by the decorators below (read by TicketEventsServer). */
export interface HandlerExtras {
  ticketEvents?: { kind: 'event' } | ({ kind: 'batch' } & BatchHandlerOptions);
}

/**
 * Handles one event type, e.g. `@OnTicketEvent('ticket.created.v1') on(@Payload() e: TicketCreatedV1,
 * @Ctx() ctx: TicketEventContext)`. Runs inside the chunk's transaction (`ctx.tx`), once per event id
 * per consumer group. Nest's own `@EventPattern` works too; this wrapper exists because its typed
 * overloads fail to compile (TS1241) under `strict` when the handler has a typed `@Ctx()` parameter.
 */
export function OnTicketEvent(type: EventType): MethodDecorator {
  const extras: HandlerExtras = { ticketEvents: { kind: 'event' } };
  return handing(EventPattern(type, TICKET_EVENTS_TRANSPORT, extras) as MethodDecorator);
}

/**
 * Handles a chunk of a partition's events at once (throughput): `(events: TicketEvent[], ctx:
 * TicketEventBatchContext)`, inside the chunk's transaction, only events new to the group, in offset order.
 */
export function OnTicketEventBatch(options: BatchHandlerOptions = {}): MethodDecorator {
  const extras: HandlerExtras = { ticketEvents: { kind: 'batch', ...options } };
  return handing(EventPattern(TICKET_EVENTS_BATCH_PATTERN, TICKET_EVENTS_TRANSPORT, extras) as MethodDecorator);
}

/** How a handler's error travels through Nest's RPC exception filter to the kit, intact. */
export interface KitHandlerError {
  status: 'error';
  kitError: unknown;
}

/**
 * Nest's default RPC exception filter logs an unknown error and replaces it with "Internal server
 * error"; the kit needs the error itself (retry, then the dead letter's reason). The method is wrapped
 * so a throw becomes an RpcException carrying the error, which the filter passes through unlogged.
 * Metadata other decorators put on the method is carried over to the wrapper.
 */
function handing(pattern: MethodDecorator): MethodDecorator {
  return (target, key, descriptor) => {
    const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
    const wrapped = async function (this: unknown, ...args: unknown[]) {
      try {
        return await original.apply(this, args);
      } catch (err) {
        throw new RpcException({ status: 'error', kitError: err } satisfies KitHandlerError);
      }
    };
    for (const k of Reflect.getOwnMetadataKeys(original))
      Reflect.defineMetadata(k, Reflect.getOwnMetadata(k, original), wrapped);
    Object.defineProperty(wrapped, 'name', { value: original.name });
    (descriptor as PropertyDescriptor).value = wrapped;
    return pattern(target, key, descriptor);
  };
}
