import type { Problem } from './ticket-client.types';

/** Codes the server sends in problem details: every code the ticket API has (its spec holds the two lists equal). */
export type ServerErrorCode =
  | 'validation_failed'
  | 'idempotency_key_missing'
  | 'idempotency_key_invalid'
  | 'malformed_json'
  | 'malformed_request'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'ticket_not_found'
  | 'idempotency_key_not_found'
  | 'idempotency_key_in_use'
  | 'idempotency_key_reused'
  | 'idempotency_key_expired'
  | 'request_timeout'
  | 'expectation_failed'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'shutting_down'
  | 'database_unavailable'
  | 'internal_error'
  /** Only from the API's /mcp endpoint (an Accept without both JSON and event stream; a browser page's Origin). */
  | 'not_acceptable'
  | 'origin_not_allowed';

/** Codes the client makes up when the server did not (or could not) say. */
export type ClientErrorCode =
  | 'network_error'
  | 'timeout'
  | 'http_error'
  | 'invalid_response'
  | 'circuit_open'
  | 'retry_budget_exhausted'
  | 'max_attempts_exceeded'
  | 'deadline_exceeded'
  | 'outcome_unknown'
  | 'aborted'
  | 'invalid_argument'
  | 'key_store_failed';

export type TicketClientErrorCode = ServerErrorCode | ClientErrorCode | (string & {});

interface ErrorInit {
  code: TicketClientErrorCode;
  message: string;
  retryable: boolean;
  status?: number;
  problem?: Problem;
  cause?: unknown;
}

/** Base of every error the client throws; `retryable` says whether trying again can help. */
export class TicketClientError extends Error {
  readonly code: TicketClientErrorCode;
  readonly retryable: boolean;
  /** HTTP status of the response that caused it, when there was one. */
  readonly status?: number;
  readonly problem?: Problem;

  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.retryable = init.retryable;
    this.status = init.status;
    this.problem = init.problem;
  }
}

/**
 * Transient: network, 5xx, 429, 409 in use, circuit open, retry budget spent. Nothing was written
 * (or the write is known to be safe to repeat): try again later, with the same intent id.
 */
export class RetryableError extends TicketClientError {
  /** How long the server (or the open circuit) asked to wait, when known. */
  readonly retryAfterMs?: number;
  /** The write's key, so the caller can retry the same intent or ask its status (writes only). */
  readonly idempotencyKey?: string;
  readonly intentId?: string;

  constructor(
    init: Omit<ErrorInit, 'retryable'> & { retryAfterMs?: number; idempotencyKey?: string; intentId?: string },
  ) {
    super({ ...init, retryable: true });
    this.retryAfterMs = init.retryAfterMs;
    this.idempotencyKey = init.idempotencyKey;
    this.intentId = init.intentId;
  }
}

/** The request itself is wrong (400/401/403/404/410/413/415/422): retrying cannot help. */
export class PermanentError extends TicketClientError {
  constructor(init: Omit<ErrorInit, 'retryable'>) {
    super({ ...init, retryable: false });
  }
}

/**
 * The client gave up while a write may or may not have happened (e.g. timeouts and the status
 * query failing too). Resolve it with `getRequestStatus(idempotencyKey)`, or retry with the same
 * `intentId` / `idempotencyKey`: that is safe. Retrying under a new key is not.
 */
export class UnknownOutcomeError extends TicketClientError {
  readonly idempotencyKey: string;
  readonly intentId?: string;
  readonly attempts: number;

  constructor(
    init: Omit<ErrorInit, 'retryable' | 'code'> & { idempotencyKey: string; intentId?: string; attempts: number },
  ) {
    super({ ...init, code: 'outcome_unknown', retryable: true });
    this.idempotencyKey = init.idempotencyKey;
    this.intentId = init.intentId;
    this.attempts = init.attempts;
  }
}
