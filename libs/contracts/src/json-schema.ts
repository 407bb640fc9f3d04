import { z } from 'zod';
import { TicketEvent } from './events';

/**
 * The ticket-events envelope as JSON Schema (draft 2020-12), for consumers in other languages. The
 * package ships it as `@tickets/contracts/ticket-event.schema.json`; a unit test keeps that file equal
 * to this output, so the zod schema stays the one source.
 */
export function ticketEventJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(TicketEvent, { target: 'draft-2020-12', io: 'output' }),
    title: 'TicketEvent',
    description:
      'A message value on the ticket-events topic (key = ticketId). Dedup by `id`: it is stable across relay retries, redeliveries and replays. Unknown `type` values may appear in later versions: skip them.',
  };
}
