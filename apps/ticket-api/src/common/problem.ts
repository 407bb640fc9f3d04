import type { ErrorCode } from '@tickets/errors';

interface ProblemSpec {
  status: number;
  title: string;
  /** Whether sending the same request again (same key) can succeed. */
  retryable: boolean;
}

/** The one HTTP mapping of every error code. A new ErrorCode does not compile until it is listed here. */
export const PROBLEMS: Record<ErrorCode, ProblemSpec> = {
  validation_failed: { status: 400, title: 'The request is not valid', retryable: false },
  malformed_json: { status: 400, title: 'The request body is not valid JSON', retryable: false },
  malformed_request: { status: 400, title: 'The HTTP request is malformed', retryable: false },
  unsupported_media_type: { status: 415, title: 'Unsupported content type', retryable: false },
  payload_too_large: { status: 413, title: 'The request body is too large', retryable: false },
  unauthorized: { status: 401, title: 'Missing or invalid API key', retryable: false },
  not_found: { status: 404, title: 'No such resource', retryable: false },
  method_not_allowed: { status: 405, title: 'Method not allowed', retryable: false },
  origin_not_allowed: { status: 403, title: 'Requests from this Origin are not allowed', retryable: false },
  not_acceptable: {
    status: 406,
    title: 'The Accept header rules out every answer this endpoint gives',
    retryable: false,
  },
  ticket_not_found: { status: 404, title: 'Ticket not found', retryable: false },
  idempotency_key_missing: { status: 400, title: 'Idempotency-Key header is required', retryable: false },
  idempotency_key_invalid: { status: 400, title: 'Idempotency-Key header is malformed', retryable: false },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency-Key was already used with a different request',
    retryable: false,
  },
  idempotency_key_in_use: {
    status: 409,
    title: 'A request with this Idempotency-Key is still in progress',
    retryable: true,
  },
  idempotency_key_expired: { status: 410, title: 'Idempotency-Key is past its replay window', retryable: false },
  idempotency_key_not_found: { status: 404, title: 'Unknown Idempotency-Key', retryable: false },
  request_timeout: { status: 408, title: 'The request did not arrive in time', retryable: false },
  expectation_failed: { status: 417, title: 'Unsupported Expect header', retryable: false },
  headers_too_large: { status: 431, title: 'Request headers too large', retryable: false },
  rate_limited: { status: 429, title: 'Too many requests', retryable: true },
  shutting_down: { status: 503, title: 'This API process is shutting down', retryable: true },
  database_unavailable: { status: 503, title: 'The database is unavailable', retryable: true },
  internal_error: { status: 500, title: 'Internal server error', retryable: true },
};

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  retryable: boolean;
  instance?: string;
  [extension: string]: unknown;
}

export function problemBody(
  code: ErrorCode,
  detail: string,
  extensions: Record<string, unknown> = {},
  instance?: string,
): ProblemBody {
  const spec = PROBLEMS[code];
  return {
    type: `/problems/${code}`,
    title: spec.title,
    status: spec.status,
    detail,
    code,
    retryable: spec.retryable,
    ...(instance ? { instance } : {}),
    ...extensions,
  };
}

/** What each code means and what a caller should do: served at /problems/{code}. */
export const PROBLEM_ADVICE: Record<ErrorCode, string> = {
  validation_failed:
    'Fix the fields listed in `errors` and send again with a NEW Idempotency-Key (nothing was stored).',
  malformed_json: 'Send a valid JSON object with Content-Type: application/json.',
  malformed_request:
    'Check the request line and headers: a header value with a line break or control character is the usual cause.',
  unsupported_media_type: 'Send the body as application/json.',
  payload_too_large: 'Shrink the body (description <= 10,000 chars, small metadata) and send again.',
  unauthorized:
    'Send Authorization: Bearer <api key>. Create a key with `npm run cli -- api-keys create --tenant <slug>`.',
  not_found: 'Check the path; the API lives under /v1.',
  method_not_allowed: 'Check the HTTP method for this path in /openapi.json.',
  origin_not_allowed:
    "A browser page from this Origin may not call /mcp (DNS-rebinding protection). Agent hosts send no Origin; to allow a web client, add its origin to the API's MCP_ALLOWED_ORIGINS.",
  not_acceptable: 'POST /mcp answers JSON or an event stream: send Accept: application/json, text/event-stream.',
  ticket_not_found: 'No ticket with this id exists in your tenant.',
  idempotency_key_missing:
    'Make one key per intent (e.g. a UUID) and send it as Idempotency-Key on the first try and every retry.',
  idempotency_key_invalid:
    'Use 1-255 printable ASCII characters, as a quoted sf-string ("...") or a bare token without spaces.',
  idempotency_key_reused:
    'This key belongs to a different request (see differingFields). This is a caller bug: do not retry; use a new key for a new intent.',
  idempotency_key_in_use:
    'The first request with this key is still running. Wait Retry-After seconds and send the same request with the same key.',
  idempotency_key_expired:
    'The key is older than the replay window; it made ticketId. Fetch that ticket instead of creating another.',
  idempotency_key_not_found:
    'Nothing is known about this key: it was never used, or its request failed and left nothing. Sending the request again with the same key is safe.',
  request_timeout:
    'The whole request (headers and body) must arrive within the server timeout; nothing was processed. A client that stalls mid-body will stall again: fix the client or network, then send the complete request with the same Idempotency-Key.',
  expectation_failed: 'Only `Expect: 100-continue` is supported; drop the Expect header.',
  headers_too_large: 'Send fewer or shorter headers (Node limits the header block to 16 KB).',
  rate_limited:
    'Your tenant (or, for failed API-key lookups, your address) is over its request rate. Wait Retry-After seconds, then send the same request with the same Idempotency-Key.',
  shutting_down:
    'Nothing was processed. Send the same request again (same Idempotency-Key) after Retry-After seconds; another process will answer.',
  database_unavailable: 'Retry with the same Idempotency-Key after Retry-After seconds.',
  internal_error: 'Retry with the same Idempotency-Key; if it persists, report errorId.',
};
