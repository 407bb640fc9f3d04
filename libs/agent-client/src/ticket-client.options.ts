import type { BackoffOptions } from './backoff';
import { CircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker';
import type { Clock } from './clock';
import type { IdempotencyKeyStore } from './key-store';
import type { RetryBudget, RetryBudgetOptions } from './retry-budget';
import type { TicketClientEventHandler } from './ticket-client.events';

export interface TicketClientOptions {
  /** e.g. `http://127.0.0.1:3000` (a path prefix is kept). */
  baseUrl: string;
  apiKey: string;
  /** Where keys of unfinished intents (random keys: of every intent) are kept. Default: in memory (use `FileKeyStore` to survive restarts). */
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

/** Ports the Fetch standard's "bad port" list blocks: the global fetch refuses them without connecting. */
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** The options a client cannot work without, checked when it is made: a TypeError that says what to pass. */
export function checkOptions(options: TicketClientOptions): void {
  if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl))
    throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
  // Every request would fail before leaving this machine, looking like a lost answer.
  const port = Number(new URL(options.baseUrl).port);
  if (options.fetch === undefined && FETCH_BAD_PORTS.has(port))
    throw new TypeError(
      `baseUrl port ${port} is one the Fetch standard blocks ("bad port"): fetch refuses to connect to it. Serve the API on another port (in code, a fetch of your own in the options also works)`,
    );
  if (typeof options.apiKey !== 'string' || options.apiKey.length === 0)
    throw new TypeError(
      `apiKey must be a non-empty string (got ${options.apiKey === '' ? 'an empty string' : typeof options.apiKey}): pass the tenant's API key, e.g. from TICKETS_API_KEY`,
    );
  // A timeout of 0 would abort every attempt after it left (each write an unknown outcome), a poll of 0 would
  // query the status in a tight loop, NaN attempts would never stop: refuse them here, where the cause is plain.
  for (const name of ['attemptTimeoutMs', 'maxTotalTimeMs', 'statusPollMs'] as const)
    requireNumber(name, options[name], (v) => v > 0, 'a positive, finite number of milliseconds');
  if (options.maxAttempts !== Infinity)
    requireNumber(
      'maxAttempts',
      options.maxAttempts,
      (v) => Number.isInteger(v) && v >= 1,
      'a whole number >= 1 (1: no retries) or Infinity (no cap)',
    );
  for (const name of ['baseMs', 'capMs'] as const)
    requireNumber(
      `backoff.${name}`,
      options.backoff?.[name],
      (v) => v > 0,
      'a positive, finite number of milliseconds',
    );
  if (options.circuitBreaker !== undefined && !(options.circuitBreaker instanceof CircuitBreaker)) {
    const breaker = options.circuitBreaker;
    for (const name of ['failureThreshold', 'windowSize', 'minimumCalls', 'lostThreshold'] as const)
      requireNumber(`circuitBreaker.${name}`, breaker[name], (v) => v >= 1, 'a number >= 1');
    requireNumber(
      'circuitBreaker.failureRateThreshold',
      breaker.failureRateThreshold,
      (v) => v > 0 && v <= 1,
      'in (0, 1]',
    );
    requireNumber('circuitBreaker.coolDownMs', breaker.coolDownMs, (v) => v >= 0, 'a number of milliseconds >= 0');
  }
}

/** `undefined` means the default; anything else must be a finite number that passes `ok`. */
function requireNumber(name: string, value: unknown, ok: (v: number) => boolean, what: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || !ok(value))
    throw new TypeError(
      `${name} must be ${what}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
    );
}
