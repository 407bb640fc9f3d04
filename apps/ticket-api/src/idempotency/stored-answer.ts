import type { StoredKey } from '@tickets/idempotency';
import { DomainError } from '@tickets/errors';
import { differingFields } from './idempotency-key';
import type { CommandAnswer } from './keyed-command.types';

/**
 * The answer to a request whose key was seen before: the stored answer (same request, inside the
 * replay window), 422 naming the differing fields (different request), or 410 naming the ticket the
 * key made (past the replay window).
 */
export function answerFromStoreOrReject(
  prior: StoredKey,
  operation: string,
  print: string,
  request: Record<string, unknown>,
  now: Date,
): CommandAnswer {
  if (prior.operation !== operation || prior.fingerprint !== print) {
    const fields = prior.operation === operation ? differingFields(prior.requestBody, request) : ['(operation)'];
    throw new DomainError(
      'idempotency_key_reused',
      prior.operation === operation
        ? `This Idempotency-Key was first used with a different request; differing field(s): ${fields.join(', ')}. Use a new key for a new intent.`
        : `This Idempotency-Key was first used for ${prior.operation}, not ${operation}. Use a new key for a new intent.`,
      { differingFields: fields },
    );
  }
  if (prior.responseBody === null || now >= prior.replayUntil) {
    throw new DomainError(
      'idempotency_key_expired',
      `This Idempotency-Key was used at ${prior.createdAt.toISOString()} and made ticket ${prior.ticketId}; its stored response is past the replay window (until ${prior.replayUntil.toISOString()}). Fetch /v1/tickets/${prior.ticketId} instead.`,
      { ticketId: prior.ticketId, ticketUrl: `/v1/tickets/${prior.ticketId}`, usedAt: prior.createdAt.toISOString() },
    );
  }
  return { outcome: prior.outcome, status: prior.responseStatus, body: prior.responseBody, ticketId: prior.ticketId };
}
