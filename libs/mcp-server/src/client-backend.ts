import type { TicketClient } from '@tickets/agent-client';
import type { TicketToolsBackend } from './backend';

/**
 * The tools over HTTP, through the retry-safe agent client (the stdio server's backend). Each write
 * sends the tool's key and keeps working on its intent for up to `toolDeadlineMs` (resends under the
 * same key, status queries after a lost answer, Retry-After and open-circuit waits) before it hands
 * the model a "call again with the same intent_id" error. Unset: the client's own per-call limits.
 */
export function clientBackend(client: TicketClient, options: { toolDeadlineMs?: number } = {}): TicketToolsBackend {
  const finishWithinMs = options.toolDeadlineMs;
  return {
    // Passing the intent too keeps it in the client's key store until it has a definite outcome.
    createTicket: (input, { intentId, idempotencyKey, signal }) =>
      client.createTicket(input, { intentId, idempotencyKey, signal, finishWithinMs }),
    cancelTicket: (ticketId, reason, { intentId, idempotencyKey, signal }) =>
      client.cancelTicket(ticketId, { intentId, idempotencyKey, reason, signal, finishWithinMs }),
    getTicket: (ticketId, { signal }) => client.getTicket(ticketId, { signal }),
    findByExternalRef: (externalRef, { signal }) => client.findByExternalRef(externalRef, { signal }),
    getRequestStatus: (key, { signal }) => client.getRequestStatus(key, { signal }),
  };
}
