import { z } from 'zod';
import { TicketEvent } from './events';

/**
 * The ticket-events envelope as JSON Schema (draft 2020-12), for consumers in other languages. The
 * package ships it as `@tickets/contracts/ticket-event.schema.json`; a unit test keeps that file equal
 * to this output, so the zod schema stays the one source.
 *
 * The input side of the schema (`io: 'input'`): its objects accept fields they do not name, as zod does
 * (it strips them) and as the topic's contract says (docs/asyncapi.yaml: new optional fields may be added
 * without a version change). The output side would close every object (`additionalProperties: false`), so a
 * consumer validating with it would dead-letter every event once a field is added.
 */
export function ticketEventJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(TicketEvent, { target: 'draft-2020-12', io: 'input' }),
    title: 'TicketEvent',
    description:
      'A message value on the ticket-events topic (key = ticketId). Dedup by `id`: it is stable across relay retries, redeliveries and replays. Unknown `type` values may appear in later versions: skip them.',
  };
}
