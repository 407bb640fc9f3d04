// @tickets/event-consumer/testing: hooks for a consumer's own crash tests. Not for production.
import { FAULTS, type KitFaults } from './faults';
import type { TicketEventsOptions } from './ticket-events.options';

export type { KitFaults };

/** The options with test hooks attached (e.g. stop still between a chunk's commit and its offset commit). */
export function withFaults<T extends TicketEventsOptions>(options: T, faults: KitFaults | undefined): T {
  return faults ? { ...options, [FAULTS]: faults } : options;
}
