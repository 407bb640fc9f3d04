import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Request id: the caller's X-Request-Id when it is sane, else a fresh UUID. */
export function requestIdFrom(headers: Record<string, unknown>): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The W3C trace context to put on events caused by this request: the caller's trace id when it sent a
 * valid `traceparent`, with a new span id, else a new trace.
 */
export function traceparentFor(req: FastifyRequest): string {
  const incoming = req.headers.traceparent;
  const m = typeof incoming === 'string' ? TRACEPARENT.exec(incoming) : null;
  const traceId = m && !/^0+$/.test(m[1]) ? m[1] : randomBytes(16).toString('hex');
  return `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
}
