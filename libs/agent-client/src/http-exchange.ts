import type { Problem } from './ticket-client.types';

export interface HttpRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** A response arrived in full (any status). */
export interface HttpResponse {
  kind: 'response';
  status: number;
  headers: Headers;
  body: unknown;
  problem?: Problem;
}

/**
 * No usable response. `refused` means the connection never opened, so the request cannot have
 * been processed; after `timeout` or `lost` it may have been.
 */
export interface HttpFailure {
  kind: 'failure';
  failure: 'timeout' | 'lost' | 'refused';
  /** The status line and headers had arrived: the server answered, only the rest went missing. */
  responseStarted: boolean;
  cause: unknown;
}

/** The caller's signal fired. */
export interface HttpAborted {
  kind: 'aborted';
}

export type HttpExchange = HttpResponse | HttpFailure | HttpAborted;

export interface HttpTarget {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
}

/** Connect-phase errors: the request never left this machine. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Why an exchange got no usable answer: the `reason` of retry events and metrics, and of give-up messages. */
export type FailureReason =
  'host_not_found' | 'host_unreachable' | 'connection_refused' | 'timeout' | 'connection_lost';

/** The same words for a write and a read (a write's reason may add what the status query found after them). */
export function failureReason(result: HttpFailure): FailureReason {
  if (result.failure === 'timeout') return 'timeout';
  if (result.failure === 'lost') return 'connection_lost';
  return notSentReason(result.cause);
}

/** Why a request never left this machine. */
function notSentReason(cause: unknown): 'host_not_found' | 'host_unreachable' | 'connection_refused' {
  const codes = errorCodes(cause);
  if (codes.length > 0 && codes.every((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN')) return 'host_not_found';
  if (codes.length > 0 && codes.every((c) => c !== 'ECONNREFUSED')) return 'host_unreachable';
  return 'connection_refused';
}

/** One HTTP exchange with its own timeout. Never throws: every way it can end is a value. */
export async function exchange(target: HttpTarget, request: HttpRequest): Promise<HttpExchange> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      controller.abort();
    },
    Math.max(1, request.timeoutMs),
  );
  const onCallerAbort = (): void => controller.abort();
  request.signal?.addEventListener('abort', onCallerAbort, { once: true });
  if (request.signal?.aborted) controller.abort();

  const headers: Record<string, string> = {
    authorization: `Bearer ${target.apiKey}`,
    accept: 'application/json, application/problem+json',
    ...request.headers,
  };
  let payload: string | undefined;
  if (request.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(request.body);
  }

  let responseStarted = false;
  try {
    const response = await target.fetch(`${target.baseUrl.replace(/\/+$/, '')}${request.path}`, {
      method: request.method,
      headers,
      body: payload,
      signal: controller.signal,
    });
    responseStarted = true;
    const text = await response.text();
    const body = parseBody(text, response.headers.get('content-type'));
    if (body === UNPARSEABLE && response.ok) {
      // A success we cannot read is as good as a lost one: the caller must find out what happened.
      return {
        kind: 'failure',
        failure: 'lost',
        responseStarted,
        cause: new Error(`unreadable ${response.status} body`),
      };
    }
    const value = body === UNPARSEABLE ? text : body;
    return {
      kind: 'response',
      status: response.status,
      headers: response.headers,
      body: value,
      problem: toProblem(response.status, value),
    };
  } catch (error) {
    if (request.signal?.aborted) return { kind: 'aborted' };
    if (timedOut) return { kind: 'failure', failure: 'timeout', responseStarted, cause: error };
    return { kind: 'failure', failure: wasNeverSent(error) ? 'refused' : 'lost', responseStarted, cause: error };
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener('abort', onCallerAbort);
  }
}

const UNPARSEABLE = Symbol('unparseable');

function parseBody(text: string, contentType: string | null): unknown {
  if (text === '') return undefined;
  if (contentType !== null && !/json/i.test(contentType)) return UNPARSEABLE;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return UNPARSEABLE;
  }
}

/** Problem details from an error body that carries a `code`; anything else is not one. */
export function toProblem(status: number, body: unknown): Problem | undefined {
  if (status < 400 || typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const record = body as Record<string, unknown>;
  if (typeof record.code !== 'string') return undefined;
  return { ...record, status, code: record.code } as Problem;
}

/** fetch wraps socket errors in `TypeError('fetch failed', { cause })`; happy eyeballs may aggregate several. */
function wasNeverSent(error: unknown): boolean {
  const codes = errorCodes(error);
  return codes.length > 0 && codes.every((code) => NOT_SENT_CODES.has(code));
}

function errorCodes(error: unknown, depth = 0): string[] {
  if (typeof error !== 'object' || error === null || depth > 4) return [];
  const record = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (Array.isArray(record.errors) && record.errors.length > 0) {
    return record.errors.flatMap((inner: unknown) => errorCodes(inner, depth + 1));
  }
  if (typeof record.code === 'string') return [record.code];
  return errorCodes(record.cause, depth + 1);
}
