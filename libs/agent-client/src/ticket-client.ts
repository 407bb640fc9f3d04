import { BackoffOptions, defaultBackoff, fullJitterDelay, parseRetryAfter } from './backoff';
import { breakerVerdict } from './breaker-verdict';
import { CircuitBreaker, CircuitBreakerOptions } from './circuit-breaker';
import { Clock, systemClock } from './clock';
import { exchange, HttpExchange, HttpRequest, HttpResponse, toProblem } from './http-exchange';
import {
  deriveIdempotencyKey,
  formatIdempotencyKeyHeader,
  isValidIdempotencyKey,
  newIdempotencyKey,
  WriteOperation,
} from './idempotency-key';
import { IdempotencyKeyStore, InMemoryKeyStore } from './key-store';
import { RetryBudget, RetryBudgetOptions } from './retry-budget';
import {
  PermanentError,
  RetryableError,
  TicketClientError,
  TicketClientErrorCode,
  UnknownOutcomeError,
} from './ticket-client.errors';
import type { ClientOperation, TicketClientEvent, TicketClientEventHandler } from './ticket-client.events';
import type {
  CancelOutcome,
  CancelTicketOptions,
  CancelTicketResult,
  CreateOutcome,
  CreateTicketInput,
  CreateTicketOptions,
  CreateTicketResult,
  ReadOptions,
  RequestState,
  RequestStatus,
  Ticket,
  WriteResult,
} from './ticket-client.types';

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

interface WriteCall<O> {
  operation: WriteOperation;
  path: string;
  body: unknown;
  key: string;
  intentId?: string;
  /** Entry in the key store, when the intent is named. */
  storeEntry?: string;
  signal?: AbortSignal;
  finishWithinMs?: number;
  /** Turns a 2xx into the result's outcome. `replayed`: the server answered from its record. */
  outcome(status: number, replayed: boolean, mayHaveLanded: boolean): O;
}

/** Progress of one call, for give-up decisions. */
interface CallState {
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

type StatusResolution =
  | { kind: 'completed'; status: number; body: unknown }
  | { kind: 'expired'; ticketId: string | null }
  | { kind: 'unknown' }
  | { kind: 'failed'; reason: string }
  | { kind: 'gave-up'; error: TicketClientError };

/**
 * Retry-safe client for the ticket API. Writes use one idempotency key per intent, chosen before
 * the first attempt and reused on every retry; after a timeout or lost connection the client asks
 * the server what happened to that key before sending again. Retries use full-jitter backoff
 * (Retry-After wins), a per-call limit, a client-wide retry budget and a circuit breaker.
 */
export class TicketClient {
  private readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly keyStore: IdempotencyKeyStore;
  private readonly keyStrategy: 'derived' | 'random';
  private readonly attemptTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly maxTotalTimeMs: number;
  private readonly backoff: BackoffOptions;
  private readonly statusPollMs: number;
  private readonly budget: RetryBudget;
  private readonly breaker: CircuitBreaker;
  private readonly onEvent?: TicketClientEventHandler;
  private readonly random: () => number;
  private readonly clock: Clock;
  private readonly fetchImpl: typeof fetch;

  constructor(options: TicketClientOptions) {
    if (!/^https?:\/\//.test(options.baseUrl)) throw new RangeError('baseUrl must be an http(s) URL');
    if (options.apiKey.length === 0) throw new RangeError('apiKey must not be empty');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.keyStore = options.keyStore ?? new InMemoryKeyStore();
    this.keyStrategy = options.keyStrategy ?? 'derived';
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 10_000;
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.maxTotalTimeMs = options.maxTotalTimeMs ?? 30_000;
    this.backoff = { ...defaultBackoff, ...options.backoff };
    this.statusPollMs = options.statusPollMs ?? 500;
    this.onEvent = options.onEvent;
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? systemClock;
    this.fetchImpl = options.fetch ?? fetch;
    const now = (): number => this.clock.now();
    this.budget = options.retryBudget instanceof RetryBudget ? options.retryBudget : new RetryBudget(options.retryBudget, now);
    this.breaker =
      options.circuitBreaker instanceof CircuitBreaker ? options.circuitBreaker : new CircuitBreaker(options.circuitBreaker, now);
    this.breaker.onStateChange((from, to) => this.emit({ type: 'breaker-state-change', baseUrl: this.baseUrl, from, to }));
  }

  /** State of this client's circuit breaker. */
  get circuitState(): CircuitBreaker['state'] {
    return this.breaker.state;
  }

  /**
   * Creates a ticket at most once per intent. Pass `intentId` whenever the caller might retry
   * (including after a crash): the same intent id always sends the same key.
   */
  async createTicket(input: CreateTicketInput, options: CreateTicketOptions = {}): Promise<CreateTicketResult> {
    const { key, storeEntry } = await this.keyFor('create', options);
    return this.write<CreateOutcome>({
      operation: 'create',
      path: '/v1/tickets',
      body: input,
      key,
      intentId: options.intentId,
      storeEntry,
      signal: options.signal,
      finishWithinMs: options.finishWithinMs,
      outcome: (status, replayed, mayHaveLanded) =>
        status === 200 ? 'deduplicated' : replayed && !mayHaveLanded ? 'replayed' : 'created',
    });
  }

  /** Cancels a ticket; cancelling twice is not an error (the second call returns the cancelled ticket). */
  async cancelTicket(ticketId: string, options: CancelTicketOptions = {}): Promise<CancelTicketResult> {
    requireNonEmpty('ticketId', ticketId);
    const { key, storeEntry } = await this.keyFor('cancel', options, ticketId);
    return this.write<CancelOutcome>({
      operation: 'cancel',
      path: `/v1/tickets/${encodeURIComponent(ticketId)}/cancel`,
      body: options.reason === undefined ? {} : { reason: options.reason },
      key,
      intentId: options.intentId,
      storeEntry,
      signal: options.signal,
      finishWithinMs: options.finishWithinMs,
      outcome: (_status, replayed, mayHaveLanded) => (replayed && !mayHaveLanded ? 'replayed' : 'cancelled'),
    });
  }

  /** The ticket, or null when it does not exist (for this API key's tenant). */
  async getTicket(ticketId: string, options: ReadOptions = {}): Promise<Ticket | null> {
    requireNonEmpty('ticketId', ticketId);
    return this.read('get', `/v1/tickets/${encodeURIComponent(ticketId)}`, options, (response) => {
      if (response.status === 404 && response.problem?.code === 'ticket_not_found') return { value: null };
      if (response.status === 200) return { value: asTicket(response.body) };
      return undefined;
    });
  }

  /** The read-only pre-check: the ticket carrying this business reference, or null. */
  async findByExternalRef(externalRef: string, options: ReadOptions = {}): Promise<Ticket | null> {
    requireNonEmpty('externalRef', externalRef);
    return this.read('find', `/v1/tickets?externalRef=${encodeURIComponent(externalRef)}`, options, (response) => {
      if (response.status !== 200) return undefined;
      const items = (response.body as { items?: unknown } | undefined)?.items;
      if (!Array.isArray(items)) throw invalidResponse('a list of tickets');
      return { value: items.length === 0 ? null : asTicket(items[0]) };
    });
  }

  /** What the server knows about an idempotency key; `unknown` means resending it is safe. */
  async getRequestStatus(idempotencyKey: string, options: ReadOptions = {}): Promise<RequestStatus> {
    requireValidKey(idempotencyKey);
    return this.read('status', statusPath(idempotencyKey), options, (response) => {
      const status = toRequestStatus(idempotencyKey, response);
      return status === undefined ? undefined : { value: status };
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  private async write<O>(call: WriteCall<O>): Promise<WriteResult<O>> {
    const state: CallState = {
      operation: call.operation,
      idempotencyKey: call.key,
      intentId: call.intentId,
      deadline: this.clock.now() + (call.finishWithinMs ?? this.maxTotalTimeMs),
      attempts: 0,
      retryIndex: 0,
      uncertain: false,
      mayHaveLanded: false,
      persistent: call.finishWithinMs !== undefined,
      signal: call.signal,
    };
    this.budget.recordRequest();

    const finish = async (status: number, body: unknown, replayed: boolean, confirmedBy: WriteResult<O>['confirmedBy']): Promise<WriteResult<O>> => {
      const ticket = asTicket(body);
      const outcome = call.outcome(status, replayed, state.mayHaveLanded);
      if (replayed) this.emit({ ...eventBase(state), type: 'replay', ticketId: ticket.id });
      if (call.operation === 'create' && status === 200) {
        this.emit({ ...eventBase(state), type: 'deduplicated', ticketId: ticket.id, externalRef: ticket.externalRef });
      }
      await this.forgetKey(call.storeEntry);
      return { outcome, ticket, idempotencyKey: call.key, intentId: call.intentId, attempts: state.attempts, confirmedBy };
    };
    const permanent = async (error: PermanentError): Promise<never> => {
      await this.forgetKey(call.storeEntry);
      throw this.giveUp(state, error);
    };

    for (;;) {
      const sent = await this.send(state, {
        method: 'POST',
        path: call.path,
        headers: { 'idempotency-key': formatIdempotencyKeyHeader(call.key) },
        body: call.body,
      });
      if (sent.kind === 'gave-up') throw sent.error;
      const result = sent.exchange;

      let retryReason: string;
      let retryAfterMs: number | undefined;
      let askStatus = false;

      if (result.kind === 'failure') {
        retryReason = result.failure === 'refused' ? 'connection_refused' : result.failure === 'timeout' ? 'timeout' : 'connection_lost';
        if (result.failure !== 'refused') {
          state.uncertain = true;
          state.mayHaveLanded = true;
          askStatus = true;
        }
      } else {
        if (result.status >= 200 && result.status < 300) {
          return finish(result.status, result.body, result.headers.get('idempotent-replayed') === 'true', 'response');
        }
        retryAfterMs = parseRetryAfter(result.headers.get('retry-after'), this.clock.now());
        retryReason = result.problem?.code ?? `http_${result.status}`;
        if (result.status >= 500) {
          // Only a 503 database_unavailable is known not to have run; any other 5xx (a 500, a proxy's
          // 502/504) may sit after a commit, so ask before sending again.
          if (!(result.status === 503 && result.problem?.code === 'database_unavailable')) {
            state.uncertain = true;
            state.mayHaveLanded = true;
            askStatus = true;
          }
        } else if (result.status === 409 && result.problem?.code === 'idempotency_key_in_use') {
          // Another request with this key (a lost earlier attempt, or another process) is running.
          state.uncertain = true;
        } else if (!isTransientStatus(result)) {
          return permanent(permanentFrom(result));
        }
      }

      if (askStatus) {
        const resolution = await this.resolveByStatus(state, call.key);
        switch (resolution.kind) {
          case 'completed':
            if (resolution.status >= 200 && resolution.status < 300) {
              return finish(resolution.status, resolution.body, true, 'status-query');
            }
            if (resolution.status < 500) {
              return permanent(permanentFrom({ status: resolution.status, body: resolution.body, problem: toProblem(resolution.status, resolution.body) }));
            }
            retryReason = 'stored_server_error';
            break;
          case 'expired':
            return permanent(
              new PermanentError({
                code: 'idempotency_key_expired',
                status: 410,
                message: `Idempotency key ${call.key} is past its replay window; it made ticket ${resolution.ticketId ?? '(unknown)'}`,
                problem: { status: 410, code: 'idempotency_key_expired', retryable: false, ticketId: resolution.ticketId ?? undefined },
              }),
            );
          case 'unknown':
            // The server never saw it, or rolled it back: sending again is safe and needed.
            state.uncertain = false;
            retryReason = `${retryReason}_not_processed`;
            break;
          case 'failed':
            retryReason = `${retryReason}_status_${resolution.reason}`;
            break;
          case 'gave-up':
            throw resolution.error;
        }
      }

      const stop = await this.pauseBeforeRetry(state, retryReason, retryAfterMs);
      if (stop) throw stop;
    }
  }

  /**
   * Asks `GET /v1/idempotency-keys/{key}` until the answer is definite: completed, expired or
   * unknown. While the first request is still processing, waits (Retry-After, else a short poll).
   * A failing query ends the loop: the caller backs off and resends under the same key.
   */
  private async resolveByStatus(state: CallState, key: string): Promise<StatusResolution> {
    for (;;) {
      const remaining = state.deadline - this.clock.now();
      if (remaining <= 0) return { kind: 'gave-up', error: this.stopError(state, 'deadline_exceeded', 'Gave up: time budget spent while resolving the outcome') };
      const permit = this.breaker.acquire();
      if (!permit) {
        this.emit({ ...eventBase(state), type: 'status-query', state: 'failed' });
        return { kind: 'failed', reason: 'circuit_open' };
      }
      const result = await exchange(this.target(), {
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
        return { kind: 'failed', reason: result.kind === 'failure' ? result.failure : `http_${result.status}` };
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
            return { kind: 'gave-up', error: this.stopError(state, 'deadline_exceeded', 'Gave up: the request is still processing') };
          }
          await this.clock.sleep(wait, state.signal);
          if (state.signal?.aborted) return { kind: 'gave-up', error: this.abortedError(state) };
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  private async read<T>(
    operation: ClientOperation,
    path: string,
    options: ReadOptions,
    interpret: (response: HttpResponse) => { value: T } | undefined,
  ): Promise<T> {
    const state: CallState = {
      operation,
      deadline: this.clock.now() + this.maxTotalTimeMs,
      attempts: 0,
      retryIndex: 0,
      uncertain: false,
      mayHaveLanded: false,
      persistent: false,
      signal: options.signal,
    };
    this.budget.recordRequest();
    for (;;) {
      const sent = await this.send(state, { method: 'GET', path });
      if (sent.kind === 'gave-up') throw sent.error;
      const result = sent.exchange;
      let retryAfterMs: number | undefined;
      let reason: string;
      if (result.kind === 'failure') {
        reason = result.failure;
      } else {
        const interpreted = interpret(result);
        if (interpreted) return interpreted.value;
        if (!isTransientStatus(result)) throw this.giveUp(state, permanentFrom(result));
        retryAfterMs = parseRetryAfter(result.headers.get('retry-after'), this.clock.now());
        reason = result.problem?.code ?? `http_${result.status}`;
      }
      const stop = await this.pauseBeforeRetry(state, reason, retryAfterMs);
      if (stop) throw stop;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Shared machinery

  /** One request through the circuit breaker, with the per-attempt timeout. */
  private async send(
    state: CallState,
    request: Omit<HttpRequest, 'timeoutMs' | 'signal'>,
  ): Promise<{ kind: 'sent'; exchange: Exclude<HttpExchange, { kind: 'aborted' }> } | { kind: 'gave-up'; error: TicketClientError }> {
    if (state.signal?.aborted) return { kind: 'gave-up', error: this.abortedError(state) };
    const remaining = state.deadline - this.clock.now();
    if (remaining <= 0) return { kind: 'gave-up', error: this.stopError(state, 'deadline_exceeded', 'Gave up: time budget spent') };
    const permit = this.breaker.acquire();
    if (!permit) {
      // A half-open circuit has its probe out: that answer comes within one attempt timeout.
      const wait = this.breaker.retryAfterMs() || Math.min(this.attemptTimeoutMs, this.backoff.baseMs);
      if (state.persistent && this.clock.now() + wait < state.deadline) {
        await this.clock.sleep(wait, state.signal);
        return this.send(state, request);
      }
      return {
        kind: 'gave-up',
        error: this.stopError(state, 'circuit_open', `Circuit open for ${this.baseUrl}: failing fast`, this.breaker.retryAfterMs()),
      };
    }
    state.attempts += 1;
    this.emit({ ...eventBase(state), type: 'attempt', attempt: state.attempts, method: request.method, path: request.path });
    const result = await exchange(this.target(), { ...request, timeoutMs: Math.min(this.attemptTimeoutMs, remaining), signal: state.signal });
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
  private async pauseBeforeRetry(state: CallState, reason: string, retryAfterMs: number | undefined): Promise<TicketClientError | undefined> {
    if (!state.persistent && state.attempts >= this.maxAttempts) {
      return this.stopError(state, 'max_attempts_exceeded', `Gave up after ${state.attempts} attempts (last: ${reason})`);
    }
    let delayMs = retryAfterMs ?? fullJitterDelay(state.retryIndex, this.backoff, this.random);
    state.retryIndex += 1;
    const pastDeadline = (): TicketClientError | undefined =>
      this.clock.now() + delayMs >= state.deadline
        ? this.stopError(state, 'deadline_exceeded', `Gave up: waiting ${delayMs} ms would pass the time budget (last: ${reason})`, retryAfterMs)
        : undefined;
    if (!state.persistent) {
      const late = pastDeadline();
      if (late) return late;
      if (!this.budget.tryAcquireRetry()) {
        this.emit({ ...eventBase(state), type: 'budget-exhausted' });
        return this.stopError(state, 'retry_budget_exhausted', `Gave up: the client's retry budget is spent (last: ${reason})`);
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

  private async sleepBeforeRetry(state: CallState, delayMs: number, reason: string): Promise<TicketClientError | undefined> {
    this.emit({ ...eventBase(state), type: 'retry', attempt: state.attempts, delayMs, reason });
    await this.clock.sleep(delayMs, state.signal);
    return state.signal?.aborted ? this.abortedError(state) : undefined;
  }

  /**
   * The error for giving up on a transient condition: `UnknownOutcomeError` if a write may have
   * landed unseen, else a `RetryableError`. Emits give-up.
   */
  private stopError(state: CallState, code: TicketClientErrorCode, message: string, retryAfterMs?: number): TicketClientError {
    return this.giveUp(state, new RetryableError({ code, message, retryAfterMs, idempotencyKey: state.idempotencyKey, intentId: state.intentId }));
  }

  private abortedError(state: CallState): TicketClientError {
    return this.giveUp(
      state,
      new RetryableError({ code: 'aborted', message: 'The call was aborted by its caller', idempotencyKey: state.idempotencyKey, intentId: state.intentId }),
    );
  }

  private giveUp(state: CallState, error: TicketClientError): TicketClientError {
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

  private async keyFor(
    operation: WriteOperation,
    options: CreateTicketOptions,
    ticketId?: string,
  ): Promise<{ key: string; storeEntry?: string }> {
    if (options.idempotencyKey !== undefined) requireValidKey(options.idempotencyKey);
    if (options.intentId === undefined) {
      return { key: options.idempotencyKey ?? newIdempotencyKey(operation) };
    }
    requireNonEmpty('intentId', options.intentId);
    const storeEntry = ticketId === undefined ? `${operation}:${options.intentId}` : `${operation}:${ticketId}:${options.intentId}`;
    try {
      const remembered = options.idempotencyKey === undefined ? await this.keyStore.get(storeEntry) : undefined;
      if (remembered !== undefined) return { key: remembered, storeEntry };
      const key =
        options.idempotencyKey ??
        (this.keyStrategy === 'derived' ? deriveIdempotencyKey(operation, options.intentId, ticketId) : newIdempotencyKey(operation));
      await this.keyStore.set(storeEntry, key);
      return { key, storeEntry };
    } catch (error) {
      throw new RetryableError({ code: 'key_store_failed', message: 'Could not read or save the idempotency key', cause: error });
    }
  }

  /** Best effort: a leftover entry only means a later call of the same intent replays it. */
  private async forgetKey(storeEntry: string | undefined): Promise<void> {
    if (storeEntry === undefined) return;
    await this.keyStore.delete(storeEntry).catch(() => undefined);
  }

  private target() {
    return { baseUrl: this.baseUrl, apiKey: this.apiKey, fetch: this.fetchImpl };
  }

  private emit(event: TicketClientEvent): void {
    if (!this.onEvent) return;
    try {
      this.onEvent(event);
    } catch {
      // A logging hook must never change the outcome of a call.
    }
  }
}

function eventBase(state: CallState): { operation: ClientOperation; idempotencyKey?: string; intentId?: string } {
  return { operation: state.operation, idempotencyKey: state.idempotencyKey, intentId: state.intentId };
}

function statusPath(key: string): string {
  return `/v1/idempotency-keys/${encodeURIComponent(key)}`;
}

/** 408, 425 and 429 say "not now", as does any problem the server itself marks retryable. */
function isTransientStatus(response: Pick<HttpResponse, 'status' | 'problem'>): boolean {
  if (response.status >= 500 || response.status === 408 || response.status === 425 || response.status === 429) return true;
  if (response.status === 409 && response.problem?.code === 'idempotency_key_in_use') return true;
  return response.problem?.retryable === true;
}

function permanentFrom(response: Pick<HttpResponse, 'status' | 'body' | 'problem'>): PermanentError {
  const problem = response.problem;
  const detail = problem?.detail ?? problem?.title ?? (typeof response.body === 'string' ? response.body.slice(0, 200) : undefined);
  return new PermanentError({
    code: problem?.code ?? 'http_error',
    status: response.status,
    problem,
    message: `HTTP ${response.status}${problem ? ` ${problem.code}` : ''}${detail ? `: ${detail}` : ''}`,
  });
}

const REQUEST_STATES: readonly RequestState[] = ['processing', 'completed', 'expired'];

function toRequestStatus(key: string, response: HttpResponse): RequestStatus | undefined {
  if (response.status === 404 && response.problem?.code === 'idempotency_key_not_found') {
    return { key, state: 'unknown', ticketId: null, createdAt: null, expiresAt: null };
  }
  if (response.status !== 200) return undefined;
  const body = response.body as Partial<Record<keyof RequestStatus, unknown>> | undefined;
  const state = body?.state;
  if (typeof state !== 'string' || !REQUEST_STATES.includes(state as RequestState)) throw invalidResponse('an idempotency key status');
  const stored = body?.response as { status?: unknown; body?: unknown } | undefined;
  return {
    key,
    state: state as RequestState,
    ticketId: typeof body?.ticketId === 'string' ? body.ticketId : null,
    response: stored && typeof stored.status === 'number' ? { status: stored.status, body: parseStoredBody(stored.body) } : undefined,
    createdAt: typeof body?.createdAt === 'string' ? body.createdAt : null,
    expiresAt: typeof body?.expiresAt === 'string' ? body.expiresAt : null,
  };
}

/** The server may hand the stored body back as the JSON text it saved. */
function parseStoredBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

function asTicket(body: unknown): Ticket {
  if (typeof body !== 'object' || body === null || typeof (body as { id?: unknown }).id !== 'string') {
    throw invalidResponse('a ticket');
  }
  return body as Ticket;
}

function invalidResponse(expected: string): PermanentError {
  return new PermanentError({ code: 'invalid_response', message: `The server's answer was not ${expected}` });
}

function requireNonEmpty(name: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new PermanentError({ code: 'invalid_argument', message: `${name} must be a non-empty string` });
  }
}

function requireValidKey(key: string): void {
  if (!isValidIdempotencyKey(key)) {
    throw new PermanentError({ code: 'invalid_argument', message: 'An idempotency key is 1-255 printable ASCII characters' });
  }
}
