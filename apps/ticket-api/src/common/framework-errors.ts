import { STATUS_CODES } from 'node:http';
import type { ErrorCode } from '@tickets/errors';
import { problemBody, type ProblemBody } from './problem';

/**
 * The one map from what Fastify and Node's HTTP server reject on their own to a problem. Fastify's
 * errors reach ProblemFilter (route errors, body parsing) or `frameworkErrors` (URL decoding, router
 * limits); Node's reach the socket's `clientError` before any request object exists.
 */
export const FASTIFY_ERRORS: Record<string, (e: Error) => ProblemBody> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (e) =>
    problemBody('unsupported_media_type', `${e.message}. Use Content-Type: application/json.`),
  FST_ERR_CTP_BODY_TOO_LARGE: () => problemBody('payload_too_large', 'The request body exceeds the size limit.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    problemBody('malformed_json', 'The body is empty but Content-Type is application/json.'),
  FST_ERR_CTP_INVALID_JSON_BODY: (e) => problemBody('malformed_json', e.message),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => problemBody('malformed_json', 'Content-Length does not match the body.'),
  FST_ERR_CTP_INVALID_TYPE: (e) => problemBody('unsupported_media_type', e.message),
  FST_ERR_BAD_URL: () =>
    problemBody(
      'malformed_request',
      'The URL is not valid percent-encoding (a `%` must be followed by two hex digits).',
    ),
  // Longer than any id or key the API accepts (maxParamLength is far above the longest encoded key).
  FST_ERR_MAX_PARAM_LENGTH: () => problemBody('not_found', 'No resource has a path segment this long.'),
};

const NODE_CLIENT_ERRORS: Record<string, { code: ErrorCode; detail: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: 'request_timeout',
    detail: 'The request (headers and body) did not arrive within the server timeout.',
  },
  HPE_HEADER_OVERFLOW: { code: 'headers_too_large', detail: 'The request headers exceed 16 KB.' },
};

/** The problem for an error Node's HTTP parser raised on a connection (socket `clientError`). */
export function clientErrorProblem(err: Error & { code?: string }): ProblemBody {
  const known = err.code ? NODE_CLIENT_ERRORS[err.code] : undefined;
  if (known) return problemBody(known.code, known.detail);
  return problemBody('malformed_request', `The HTTP request could not be parsed (${err.code ?? err.message}).`);
}

/** A complete HTTP/1.1 response carrying `body`, for the places that only have the raw socket. */
export function rawProblemResponse(body: ProblemBody): string {
  const json = JSON.stringify(body);
  return (
    `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status] ?? 'Error'}\r\nContent-Type: application/problem+json\r\n` +
    `X-Content-Type-Options: nosniff\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  );
}
