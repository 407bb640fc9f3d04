import { BackoffOptions, fullJitterDelay, parseRetryAfter } from './backoff';
import { breakerVerdict } from './breaker-verdict';
import type { BreakerPermit, CircuitBreaker } from './circuit-breaker';
import type { Clock } from './clock';
import { exchange, failureReason, HttpExchange, HttpRequest, HttpTarget } from './http-exchange';
import type { RetryBudget } from './retry-budget';
import { RetryableError, TicketClientError, TicketClientErrorCode, UnknownOutcomeError } from './ticket-client.errors';
import type { ClientOperation, TicketClientEvent, TicketClientEventHandler } from './ticket-client.events';
import { statusPath, toRequestStatus } from './ticket-client.responses';
import type { RequestStatus } from './ticket-client.types';

/** Progress of one call, for give-up decisions. */
export interface CallState {
  operation: ClientOperation;
  idempotencyKey?: string;
  intentId?: string;
  deadline: number;
  attempts: number;
  retryIndex: number;
  /** A write may have landed and we have not learnt what it did. */
  uncertain: boolean;
  /** Some attempt of this call may have been processed (decides `created` vs `replayed`). */
  mayHaveLanded: boolean;
  /**
   * Finish the intent by the deadline: no attempt cap, and an open circuit or a spent retry budget
   * is waited out when the wait ends before the deadline (see `WriteOptions.finishWithinMs`).
   */
  persistent: boolean;
  signal?: AbortSignal;
}

export type StatusResolution =
  | { kind: 'completed'; status: number; body: unknown }
  | { kind: 'expired'; ticketId: string | null }
  | { kind: 'unknown' }
  | { kind: 'failed'; reason: string }
  | { kind: 'gave-up'; error: TicketClientError };

export interface CallRunnerSettings {
  baseUrl: string;
  target: HttpTarget;
  attemptTimeoutMs: number;
  maxAttempts: number;
  backoff: BackoffOptions;
  statusPollMs: number;
  budget: RetryBudget;
  breaker: CircuitBreaker;
  clock: Clock;
  random: () => number;
  onEvent?: TicketClientEventHandler;
}

/**
 * The machinery every call of one TicketClient shares: one request through the circuit breaker,
 * the wait before the next attempt (backoff, Retry-After, retry budget), status queries after an
 * uncertain write, and the error a call gives up with.
 */
export class CallRunner {
  private readonly baseUrl: string;
  private readonly target: HttpTarget;
  private readonly attemptTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly backoff: BackoffOptions;
  private readonly statusPollMs: number;
  private readonly budget: RetryBudget;
  private readonly breaker: CircuitBreaker;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly onEvent?: TicketClientEventHandler;

  constructor(settings: CallRunnerSettings) {
    this.baseUrl = settings.baseUrl;
    this.target = settings.target;
    this.attemptTimeoutMs = settings.attemptTimeoutMs;
    this.maxAttempts = settings.maxAttempts;
    this.backoff = settings.backoff;
    this.statusPollMs = settings.statusPollMs;
    this.budget = settings.budget;
    this.breaker = settings.breaker;
    this.clock = settings.clock;
    this.random = settings.random;
    this.onEvent = settings.onEvent;
  }

  /**
   * Asks `GET /v1/idempotency-keys/{key}` until the answer is definite: completed, expired or
   * unknown. While the first request is still processing, waits (Retry-After, else a short poll).
   * A failing query ends the loop: the caller backs off and resends under the same key.
   */
  async resolveByStatus(state: CallState, key: string): Promise<StatusResolution> {
    for (;;) {
      const remaining = state.deadline - this.clock.now();
      if (remaining <= 0)
        return {
          kind: 'gave-up',
          error: this.stopError(state, 'deadline_exceeded', 'Gave up: time budget spent while resolving the outcome'),
        };
      const permit = this.breaker.acquire();
      if (!permit) {
        this.emit({ ...eventBase(state), type: 'status-query', state: 'failed' });
        return { kind: 'failed', reason: 'circuit_open' };
      }
      const result = await exchange(this.target, {
        method: 'GET',
        path: statusPath(key),
        timeoutMs: Math.min(this.attemptTimeoutMs, remaining),
        signal: state.signal,
      });
      if (result.kind === 'aborted') {
        permit.release();
        return { kind: 'gave-up', error: this.abortedError(state) };
      }
      permit[breakerVerdict(result)]();
      if (result.kind === 'failure' || result.status >= 500) {
        this.emit({ ...eventBase(state), type: 'status-query', state: 'failed' });
        return { kind: 'failed', reason: result.kind === 'failure' ? failureReason(result) : `http_${result.status}` };
      }
      let status: RequestStatus | undefined;
      try {
        status = toRequestStatus(key, result);
      } catch {
        status = undefined; // An unreadable answer is no answer: the outcome stays unknown.
      }
      if (status === undefined) {
        this.emit({ ...eventBase(state), type: 'status-query', state: 'failed' });
        return { kind: 'failed', reason: `http_${result.status}` };
      }
      this.emit({ ...eventBase(state), type: 'status-query', state: status.state });
      switch (status.state) {
        case 'completed':
          if (status.response === undefined) return { kind: 'failed', reason: 'no_stored_response' };
          return { kind: 'completed', status: status.response.status, body: status.response.body };
        case 'expired':
          return { kind: 'expired', ticketId: status.ticketId };
        case 'unknown':
          return { kind: 'unknown' };
        case 'processing': {
          const wait = parseRetryAfter(result.headers.get('retry-after'), this.clock.now()) ?? this.statusPollMs;
          if (this.clock.now() + wait >= state.deadline) {
            return {
              kind: 'gave-up',
              error: this.stopError(state, 'deadline_exceeded', 'Gave up: the request is still processing'),
            };
          }
          await this.clock.sleep(wait, state.signal);
          if (state.signal?.aborted) return { kind: 'gave-up', error: this.abortedError(state) };
        }
      }
    }
  }

  /** One request through the circuit breaker, with the per-attempt timeout. */
  async send(
    state: CallState,
    request: Omit<HttpRequest, 'timeoutMs' | 'signal'>,
  ): Promise<
    | { kind: 'sent'; exchange: Exclude<HttpExchange, { kind: 'aborted' }> }
    | { kind: 'gave-up'; error: TicketClientError }
  > {
    let permit: BreakerPermit | null;
    let remaining: number;
    for (;;) {
      if (state.signal?.aborted) return { kind: 'gave-up', error: this.abortedError(state) };
      remaining = state.deadline - this.clock.now();
      if (remaining <= 0)
        return { kind: 'gave-up', error: this.stopError(state, 'deadline_exceeded', 'Gave up: time budget spent') };
      permit = this.breaker.acquire();
      if (permit) break;
      // Open: wait out the cool-down. Half-open with the probe out: its answer decides soon, look again shortly.
      // At least 1 ms: a wait of 0 resolves at once and would starve the probe's own I/O.
      const wait = this.breaker.retryAfterMs() || Math.max(1, Math.min(this.attemptTimeoutMs, this.backoff.baseMs));
      if (!state.persistent || this.clock.now() + wait >= state.deadline) {
        return {
          kind: 'gave-up',
          error: this.stopError(
            state,
            'circuit_open',
            `Circuit open for ${this.baseUrl}: failing fast`,
            this.breaker.retryAfterMs(),
          ),
        };
      }
      await this.clock.sleep(wait, state.signal);
    }
    state.attempts += 1;
    this.emit({
      ...eventBase(state),
      type: 'attempt',
      attempt: state.attempts,
      method: request.method,
      path: request.path,
    });
    const result = await exchange(this.target, {
      ...request,
      timeoutMs: Math.min(this.attemptTimeoutMs, remaining),
      signal: state.signal,
    });
    if (result.kind === 'aborted') {
      permit.release();
      if (request.method === 'POST') {
        state.uncertain = true;
        state.mayHaveLanded = true;
      }
      return { kind: 'gave-up', error: this.abortedError(state) };
    }
    permit[breakerVerdict(result)]();
    return { kind: 'sent', exchange: result };
  }

  /** Waits before the next attempt, or says why there will be none. */
  async pauseBeforeRetry(
    state: CallState,
    reason: string,
    retryAfterMs: number | undefined,
  ): Promise<TicketClientError | undefined> {
    if (!state.persistent && state.attempts >= this.maxAttempts) {
      return this.stopError(
        state,
        'max_attempts_exceeded',
        `Gave up after ${state.attempts} attempts at ${this.last(reason)}`,
      );
    }
    let delayMs = retryAfterMs ?? fullJitterDelay(state.retryIndex, this.backoff, this.random);
    state.retryIndex += 1;
    const pastDeadline = (): TicketClientError | undefined =>
      this.clock.now() + delayMs >= state.deadline
        ? this.stopError(
            state,
            'deadline_exceeded',
            `Gave up: waiting ${delayMs} ms would pass the time budget at ${this.last(reason)}`,
            retryAfterMs,
          )
        : undefined;
    if (!state.persistent) {
      const late = pastDeadline();
      if (late) return late;
      if (!this.budget.tryAcquireRetry()) {
        this.emit({ ...eventBase(state), type: 'budget-exhausted' });
        return this.stopError(
          state,
          'retry_budget_exhausted',
          `Gave up: the client's retry budget is spent at ${this.last(reason)}`,
        );
      }
      return this.sleepBeforeRetry(state, delayMs, reason);
    }
    // A persistent call waits for the budget's next token instead of giving up: the budget still caps the rate.
    for (;;) {
      const tokenInMs = this.budget.msUntilToken();
      if (tokenInMs > delayMs) {
        this.emit({ ...eventBase(state), type: 'budget-exhausted' });
        delayMs = tokenInMs;
      }
      const late = pastDeadline();
      if (late) return late;
      const stop = await this.sleepBeforeRetry(state, delayMs, reason);
      if (stop) return stop;
      if (this.budget.tryAcquireRetry()) return undefined;
      delayMs = 1; // another call took the token during the wait
    }
  }

  async sleepBeforeRetry(state: CallState, delayMs: number, reason: string): Promise<TicketClientError | undefined> {
    this.emit({ ...eventBase(state), type: 'retry', attempt: state.attempts, delayMs, reason });
    await this.clock.sleep(delayMs, state.signal);
    return state.signal?.aborted ? this.abortedError(state) : undefined;
  }

  /**
   * The error for giving up on a transient condition: `UnknownOutcomeError` if a write may have
   * landed unseen, else a `RetryableError`. Emits give-up.
   */
  stopError(state: CallState, code: TicketClientErrorCode, message: string, retryAfterMs?: number): TicketClientError {
    return this.giveUp(
      state,
      new RetryableError({
        code,
        message,
        retryAfterMs,
        idempotencyKey: state.idempotencyKey,
        intentId: state.intentId,
      }),
    );
  }

  /** Where the calls went and the last failure, with what to check when nothing could connect. */
  private last(reason: string): string {
    const hints: Record<string, string> = {
      host_not_found: ': the host name does not resolve; check baseUrl and the DNS',
      host_unreachable:
        ': the host could not be reached (no route, or the connection timed out); check baseUrl and the network',
      connection_refused: ': nothing accepts connections there; is the ticket API running at that address?',
    };
    const hint = hints[reason] ?? '';
    return `${this.baseUrl} (last: ${reason})${hint}`;
  }

  abortedError(state: CallState): TicketClientError {
    return this.giveUp(
      state,
      new RetryableError({
        code: 'aborted',
        message: 'The call was aborted by its caller',
        idempotencyKey: state.idempotencyKey,
        intentId: state.intentId,
      }),
    );
  }

  giveUp(state: CallState, error: TicketClientError): TicketClientError {
    let thrown = error;
    if (state.uncertain && error.retryable && state.idempotencyKey !== undefined) {
      thrown = new UnknownOutcomeError({
        message: `Outcome unknown for idempotency key ${state.idempotencyKey}: ${error.message}. Retry with the same intent id or key, or ask getRequestStatus.`,
        idempotencyKey: state.idempotencyKey,
        intentId: state.intentId,
        attempts: state.attempts,
        cause: error,
      });
    }
    this.emit({ ...eventBase(state), type: 'give-up', attempts: state.attempts, reason: error.code, error: thrown });
    return thrown;
  }

  emit(event: TicketClientEvent): void {
    if (!this.onEvent) return;
    try {
      this.onEvent(event);
    } catch {
      // A logging hook must never change the outcome of a call.
    }
  }
}

export function eventBase(state: CallState): {
  operation: ClientOperation;
  idempotencyKey?: string;
  intentId?: string;
} {
  return { operation: state.operation, idempotencyKey: state.idempotencyKey, intentId: state.intentId };
}
