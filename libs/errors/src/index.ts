/**
 * Every expected failure has a stable code. The HTTP layer maps codes to statuses in one exhaustive
 * table (apps/ticket-api/src/common/problem.ts), so a new code does not compile until it is mapped.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'malformed_json'
  | 'malformed_request'
  | 'unsupported_media_type'
  | 'payload_too_large'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'origin_not_allowed'
  | 'not_acceptable'
  | 'ticket_not_found'
  | 'idempotency_key_missing'
  | 'idempotency_key_invalid'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'idempotency_key_expired'
  | 'idempotency_key_not_found'
  | 'request_timeout'
  | 'expectation_failed'
  | 'headers_too_large'
  | 'rate_limited'
  | 'shutting_down'
  | 'database_unavailable'
  | 'internal_error';

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra members for the problem body (e.g. `differingFields`, `ticketId`). */
    readonly extensions: Record<string, unknown> = {},
    /** Seconds the caller should wait before retrying, where waiting helps. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/**
 * A write whose database connection died while it ran, and whose outcome could not be decided in time
 * (see IdempotentCommandRunner): it may have committed. The one database failure answered with a 500
 * (`internal_error`, retry with the same key), never with "nothing was written".
 */
export class WriteOutcomeUnknownError extends Error {
  override name = 'WriteOutcomeUnknownError';
  constructor(readonly original: unknown) {
    super(`the write's outcome is unknown: ${original instanceof Error ? original.message : String(original)}`, {
      cause: original,
    });
  }
}
