import { randomUUID } from 'node:crypto';

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Request id: the caller's X-Request-Id when it is sane, else a fresh UUID. */
export function requestIdFrom(headers: Record<string, unknown>): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}
