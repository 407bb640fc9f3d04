import type { BackoffOptions } from './backoff';
import type { CircuitBreaker, CircuitBreakerOptions } from './circuit-breaker';
import type { Clock } from './clock';
import type { IdempotencyKeyStore } from './key-store';
import type { RetryBudget, RetryBudgetOptions } from './retry-budget';
import type { TicketClientEventHandler } from './ticket-client.events';

export interface TicketClientOptions {
  /** e.g. `http://127.0.0.1:3000` (a path prefix is kept). */
  baseUrl: string;
  apiKey: string;
  /** Where keys of unfinished intents are kept. Default: in memory (use `FileKeyStore` to survive restarts). */
  keyStore?: IdempotencyKeyStore;
  /**
   * How a key is chosen for a new intent id: `derived` (default) hashes the intent id, so the same
   * intent gets the same key in any process; `random` makes a fresh readable key and relies on
   * the key store to find it again.
   */
  keyStrategy?: 'derived' | 'random';
  /** Per-attempt timeout. Default 10 s. */
  attemptTimeoutMs?: number;
  /** Requests per call (the first one included). Default 5. */
  maxAttempts?: number;
  /** Wall time per call, waits included. Default 30 s. */
  maxTotalTimeMs?: number;
  backoff?: Partial<BackoffOptions>;
  /** Wait between status queries while a request is still processing and no Retry-After was sent. Default 500 ms. */
  statusPollMs?: number;
  /** Options, or a shared instance to budget several clients together. */
  retryBudget?: RetryBudget | Partial<RetryBudgetOptions>;
  /** Options, or a shared instance for several clients of the same base URL. */
  circuitBreaker?: CircuitBreaker | Partial<CircuitBreakerOptions>;
  onEvent?: TicketClientEventHandler;
  /** Source of jitter, [0, 1). */
  random?: () => number;
  clock?: Clock;
  fetch?: typeof fetch;
}

/** The options a client cannot work without, checked when it is made: a TypeError that says what to pass. */
export function checkOptions(options: TicketClientOptions): void {
  if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl))
    throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
  if (typeof options.apiKey !== 'string' || options.apiKey.length === 0)
    throw new TypeError(
      `apiKey must be a non-empty string (got ${options.apiKey === '' ? 'an empty string' : typeof options.apiKey}): pass the tenant's API key, e.g. from TICKETS_API_KEY`,
    );
}
