import { defaultBackoff, parseRetryAfter } from './backoff';
import { withDefaults } from './with-defaults';
import { CallRunner, CallState, eventBase } from './call-runner';
import { CircuitBreaker } from './circuit-breaker';
import { Clock, systemClock } from './clock';
import { failureReason, HttpResponse } from './http-exchange';
import { deriveIdempotencyKey, formatIdempotencyKeyHeader, newIdempotencyKey, WriteOperation } from './idempotency-key';
import { IdempotencyKeyStore, InMemoryKeyStore, underIntentLock } from './key-store';
import { RetryBudget } from './retry-budget';
import { keyStoreError } from './key-store-error';
import { notAppliedFields } from './not-applied';
import { PermanentError } from './ticket-client.errors';
import type { ClientOperation } from './ticket-client.events';
import {
  asTicket,
  invalidResponse,
  isTransientStatus,
  permanentFrom,
  requireNonEmpty,
  requireValidKey,
  statusPath,
  toRequestStatus,
} from './ticket-client.responses';
import { checkOptions, type TicketClientOptions } from './ticket-client.options';
import type {
  CancelOutcome,
  CancelTicketOptions,
  CancelTicketResult,
  CreateOutcome,
  CreateTicketInput,
  CreateTicketOptions,
  CreateTicketResult,
  ReadOptions,
  RequestStatus,
  Ticket,
  WriteResult,
} from './ticket-client.types';

export type { TicketClientOptions } from './ticket-client.options';

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
  private readonly maxTotalTimeMs: number;
  private readonly budget: RetryBudget;
  private readonly breaker: CircuitBreaker;
  private readonly clock: Clock;
  private readonly runner: CallRunner;

  constructor(options: TicketClientOptions) {
    checkOptions(options);
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.keyStore = options.keyStore ?? new InMemoryKeyStore();
    this.keyStrategy = options.keyStrategy ?? 'derived';
    this.maxTotalTimeMs = options.maxTotalTimeMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    const now = (): number => this.clock.now();
    this.budget =
      options.retryBudget instanceof RetryBudget ? options.retryBudget : new RetryBudget(options.retryBudget, now);
    this.breaker =
      options.circuitBreaker instanceof CircuitBreaker
        ? options.circuitBreaker
        : new CircuitBreaker(options.circuitBreaker, now);
    this.runner = new CallRunner({
      baseUrl: this.baseUrl,
      target: { baseUrl: this.baseUrl, apiKey: this.apiKey, fetch: options.fetch ?? fetch },
      attemptTimeoutMs: options.attemptTimeoutMs ?? 10_000,
      maxAttempts: options.maxAttempts ?? 5,
      backoff: withDefaults(defaultBackoff, options.backoff),
      statusPollMs: options.statusPollMs ?? 500,
      budget: this.budget,
      breaker: this.breaker,
      clock: this.clock,
      random: options.random ?? Math.random,
      onEvent: options.onEvent,
    });
    this.breaker.onStateChange((from, to) =>
      this.runner.emit({ type: 'breaker-state-change', baseUrl: this.baseUrl, from, to }),
    );
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
    const result = await this.write<CreateOutcome>({
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
    if (result.outcome !== 'deduplicated') return { ...result, outcome: result.outcome };
    // The ticket another key made for this externalRef: say what of this input it does not have.
    const { id: ticketId, externalRef, status } = result.ticket;
    const notApplied = notAppliedFields(input, result.ticket);
    const base = { operation: 'create', idempotencyKey: key, intentId: options.intentId } as const;
    this.runner.emit({ ...base, type: 'deduplicated', ticketId, externalRef, status, notApplied });
    return { ...result, outcome: 'deduplicated', notApplied };
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

    const finish = async (
      status: number,
      body: unknown,
      replayed: boolean,
      confirmedBy: WriteResult<O>['confirmedBy'],
    ): Promise<WriteResult<O>> => {
      const ticket = asTicket(body);
      const outcome = call.outcome(status, replayed, state.mayHaveLanded);
      if (replayed) this.runner.emit({ ...eventBase(state), type: 'replay', ticketId: ticket.id });
      await this.forgetKey(call.storeEntry);
      return {
        outcome,
        ticket,
        idempotencyKey: call.key,
        intentId: call.intentId,
        attempts: state.attempts,
        confirmedBy,
      };
    };
    const permanent = async (error: PermanentError): Promise<never> => {
      await this.forgetKey(call.storeEntry);
      throw this.runner.giveUp(state, error);
    };

    // Set once the status endpoint said the key is done. Its stored answer may be another request's (an intent
    // sent again with a different body gets 422 idempotency_key_reused when its own answer arrives), so this
    // request is sent once more at once, under the key, and the server compares the two (the `completed` case below).
    let keyDone = false;
    let confirmedAtOnce = false;
    for (;;) {
      const sent = await this.runner.send(state, {
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
        retryReason = failureReason(result);
        if (result.failure !== 'refused') {
          state.uncertain = true;
          state.mayHaveLanded = true;
          askStatus = true;
        }
      } else {
        if (result.status >= 200 && result.status < 300) {
          const replayed = result.headers.get('idempotent-replayed') === 'true';
          return finish(result.status, result.body, replayed, keyDone ? 'status-query' : 'response');
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
        const resolution = await this.runner.resolveByStatus(state, call.key);
        switch (resolution.kind) {
          case 'completed':
          case 'expired':
            if (resolution.kind === 'completed' && resolution.status >= 500) {
              retryReason = 'stored_server_error';
              break;
            }
            // The server runs nothing for a key it has: it answers this request from what it stored when the
            // two match (a replay), with 422 idempotency_key_reused when they differ, 410 past the replay window.
            keyDone = true;
            retryReason = `${retryReason}_key_done`;
            if (!confirmedAtOnce) {
              confirmedAtOnce = true;
              this.runner.emit({
                ...eventBase(state),
                type: 'retry',
                attempt: state.attempts,
                delayMs: 0,
                reason: retryReason,
              });
              continue;
            }
            break;
          case 'unknown':
            // Not there now: never received, rolled back, or still on its way to the key (queued in front of it).
            // Sending again under the key is safe and needed. The outcome stays uncertain until an answer comes: a
            // give-up from here on is an UnknownOutcomeError, since the first request may still land.
            retryReason = `${retryReason}_not_processed`;
            break;
          case 'failed':
            retryReason = `${retryReason}_status_${resolution.reason}`;
            break;
          case 'gave-up':
            throw resolution.error;
        }
      }

      const stop = await this.runner.pauseBeforeRetry(state, retryReason, retryAfterMs);
      if (stop) throw stop;
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
      const sent = await this.runner.send(state, { method: 'GET', path });
      if (sent.kind === 'gave-up') throw sent.error;
      const result = sent.exchange;
      let retryAfterMs: number | undefined;
      let reason: string;
      if (result.kind === 'failure') {
        reason = failureReason(result);
      } else {
        const interpreted = interpret(result);
        if (interpreted) return interpreted.value;
        if (!isTransientStatus(result)) throw this.runner.giveUp(state, permanentFrom(result));
        retryAfterMs = parseRetryAfter(result.headers.get('retry-after'), this.clock.now());
        reason = result.problem?.code ?? `http_${result.status}`;
      }
      const stop = await this.runner.pauseBeforeRetry(state, reason, retryAfterMs);
      if (stop) throw stop;
    }
  }

  private async keyFor(
    operation: WriteOperation,
    options: CreateTicketOptions,
    ticketId?: string,
  ): Promise<{ key: string; storeEntry?: string }> {
    if (options.idempotencyKey !== undefined) requireValidKey(options.idempotencyKey);
    const intentId = options.intentId;
    if (intentId === undefined) return { key: options.idempotencyKey ?? newIdempotencyKey(operation) };
    requireNonEmpty('intentId', intentId);
    const storeEntry = ticketId === undefined ? `${operation}:${intentId}` : `${operation}:${ticketId}:${intentId}`;
    // Clients of one store take turns per intent (see underIntentLock).
    return underIntentLock(this.keyStore, storeEntry, async () => {
      try {
        const remembered = options.idempotencyKey === undefined ? await this.keyStore.get(storeEntry) : undefined;
        if (remembered !== undefined) return { key: remembered, storeEntry };
        const key =
          options.idempotencyKey ??
          (this.keyStrategy === 'derived'
            ? deriveIdempotencyKey(operation, intentId, ticketId)
            : newIdempotencyKey(operation));
        await this.keyStore.set(storeEntry, key);
        return { key, storeEntry };
      } catch (error) {
        throw keyStoreError(error, intentId);
      }
    });
  }

  /**
   * A definite outcome drops a derived key's entry (best effort: a leftover only means a later replay). A random
   * key's entry stays: nothing else links the intent to it, and a later call of the intent must replay.
   */
  private async forgetKey(storeEntry: string | undefined): Promise<void> {
    if (storeEntry === undefined || this.keyStrategy === 'random') return;
    await this.keyStore.delete(storeEntry).catch(() => undefined);
  }
}
