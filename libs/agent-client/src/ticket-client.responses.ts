import { formatIdempotencyKeyHeader } from './idempotency-key';
import type { HttpResponse } from './http-exchange';
import { isValidIdempotencyKey } from './idempotency-key';
import { PermanentError } from './ticket-client.errors';
import type { RequestState, RequestStatus, Ticket } from './ticket-client.types';

// How the client reads the server's answers and checks its own arguments (pure functions).

export function statusPath(key: string): string {
  // The server reads the segment as it reads the header: a bare token, or a quoted string for a key with
  // spaces (or one starting with a quote), as the writes send it.
  // `.` and `..` are dot segments a URL parser removes: quoted, they stay a key.
  const bare = /^[\x21-\x7e]+$/.test(key) && !key.startsWith('"') && key !== '.' && key !== '..';
  const segment = bare ? key : formatIdempotencyKeyHeader(key);
  return `/v1/idempotency-keys/${encodeURIComponent(segment)}`;
}

/** 408, 425 and 429 say "not now", as does any problem the server itself marks retryable. */
export function isTransientStatus(response: Pick<HttpResponse, 'status' | 'problem'>): boolean {
  if (response.status >= 500 || response.status === 408 || response.status === 425 || response.status === 429)
    return true;
  if (response.status === 409 && response.problem?.code === 'idempotency_key_in_use') return true;
  return response.problem?.retryable === true;
}

export function permanentFrom(response: Pick<HttpResponse, 'status' | 'body' | 'problem'>): PermanentError {
  const problem = response.problem;
  const detail =
    problem?.detail ?? problem?.title ?? (typeof response.body === 'string' ? response.body.slice(0, 200) : undefined);
  return new PermanentError({
    code: problem?.code ?? 'http_error',
    status: response.status,
    problem,
    message: `HTTP ${response.status}${problem ? ` ${problem.code}` : ''}${detail ? `: ${detail}` : ''}`,
  });
}

export const REQUEST_STATES: readonly RequestState[] = ['processing', 'completed', 'expired'];

export function toRequestStatus(key: string, response: HttpResponse): RequestStatus | undefined {
  if (response.status === 404 && response.problem?.code === 'idempotency_key_not_found') {
    return { key, state: 'unknown', ticketId: null, createdAt: null, expiresAt: null };
  }
  if (response.status !== 200) return undefined;
  const body = response.body as Partial<Record<keyof RequestStatus, unknown>> | undefined;
  const state = body?.state;
  if (typeof state !== 'string' || !REQUEST_STATES.includes(state as RequestState))
    throw invalidResponse('an idempotency key status');
  const stored = body?.response as { status?: unknown; body?: unknown } | undefined;
  return {
    key,
    state: state as RequestState,
    ticketId: typeof body?.ticketId === 'string' ? body.ticketId : null,
    response:
      stored && typeof stored.status === 'number'
        ? { status: stored.status, body: parseStoredBody(stored.body) }
        : undefined,
    createdAt: typeof body?.createdAt === 'string' ? body.createdAt : null,
    expiresAt: typeof body?.expiresAt === 'string' ? body.expiresAt : null,
  };
}

/** The server may hand the stored body back as the JSON text it saved. */
export function parseStoredBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

export function asTicket(body: unknown): Ticket {
  if (typeof body !== 'object' || body === null || typeof (body as { id?: unknown }).id !== 'string') {
    throw invalidResponse('a ticket');
  }
  return body as Ticket;
}

export function invalidResponse(expected: string): PermanentError {
  return new PermanentError({ code: 'invalid_response', message: `The server's answer was not ${expected}` });
}

export function requireNonEmpty(name: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new PermanentError({ code: 'invalid_argument', message: `${name} must be a non-empty string` });
  }
}

export function requireValidKey(key: string): void {
  if (!isValidIdempotencyKey(key)) {
    throw new PermanentError({
      code: 'invalid_argument',
      message: 'An idempotency key is 1-255 printable ASCII characters',
    });
  }
}
