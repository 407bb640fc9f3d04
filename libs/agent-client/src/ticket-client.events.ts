import type { CircuitState } from './circuit-breaker';
import type { TicketClientError } from './ticket-client.errors';
import type { NotAppliedField } from './not-applied';
import type { RequestState, Ticket } from './ticket-client.types';

export type ClientOperation = 'create' | 'cancel' | 'get' | 'find' | 'status';

interface EventBase {
  operation: ClientOperation;
  idempotencyKey?: string;
  intentId?: string;
}

/** What the client tells `onEvent`, for logs and metrics. A throwing handler is ignored. */
export type TicketClientEvent =
  | (EventBase & { type: 'attempt'; attempt: number; method: string; path: string })
  | (EventBase & { type: 'retry'; attempt: number; delayMs: number; reason: string })
  | (EventBase & { type: 'replay'; ticketId: string })
  | (EventBase & {
      type: 'deduplicated';
      ticketId: string;
      externalRef: string | null;
      /** The existing ticket's status: a reference keeps its ticket even once cancelled. */
      status: Ticket['status'];
      /** The fields sent that the existing ticket does not have (`notAppliedFields`). */
      notApplied: NotAppliedField[];
    })
  | (EventBase & { type: 'status-query'; state: RequestState | 'failed' })
  | { type: 'breaker-state-change'; baseUrl: string; from: CircuitState; to: CircuitState }
  | (EventBase & { type: 'budget-exhausted' })
  | (EventBase & { type: 'give-up'; attempts: number; reason: string; error: TicketClientError });

export type TicketClientEventHandler = (event: TicketClientEvent) => void;
