import type { TicketEventsOptions } from './ticket-events.options';

/** Test hooks of the kit (set through `withFaults` of `@tickets/event-consumer/testing`, never in production). */
export interface KitFaults {
  /**
   * After a chunk's transaction committed and before its offset is committed. 'die' makes the
   * instance stop committing from then on, as a killed process would.
   */
  afterTransactionBeforeCommit?: (at: {
    topic: string;
    partition: number;
    lastOffset: string;
  }) => 'die' | void | Promise<'die' | void>;
}

/** A symbol key, so the hooks are no part of the options type a user sees; an object spread carries it. */
export const FAULTS: unique symbol = Symbol.for('@tickets/event-consumer.faults');

export function faultsOf(options: TicketEventsOptions): KitFaults | undefined {
  return (options as TicketEventsOptions & { [FAULTS]?: KitFaults })[FAULTS];
}
