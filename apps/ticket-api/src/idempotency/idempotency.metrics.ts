import { DomainError } from '@tickets/errors';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { KeyStatus } from './key-status.use-case';

/** What a keyed request came to, as counted: bounded, never per tenant. */
export type IdempotencyOutcome = 'new' | 'replay' | 'in_use' | 'reused' | 'expired' | 'deduplicated';
export const IDEMPOTENCY_OUTCOMES: readonly IdempotencyOutcome[] = [
  'new',
  'replay',
  'in_use',
  'reused',
  'expired',
  'deduplicated',
];

/** The refusals of a keyed request, by the problem code IdempotentCommandRunner throws. */
const REFUSALS: Partial<Record<string, IdempotencyOutcome>> = {
  idempotency_key_in_use: 'in_use',
  idempotency_key_reused: 'reused',
  idempotency_key_expired: 'expired',
};

type StatusState = KeyStatus['state'] | 'not_found';

/** How long one read of the in-flight keys serves the next scrapes. */
const IN_FLIGHT_CACHE_MS = 2_000;

/**
 * The idempotency indicators of the API, on its registry: outcomes of keyed requests (the hit rate
 * and the duplicate-prevention rate are ratios of these), status queries (GET /v1/idempotency-keys/{key}:
 * callers asking after a timeout), and the keys in flight in the whole database (read at scrape
 * time). Counting allocates nothing: the label children are bound once.
 */
export class IdempotencyMetrics {
  private readonly outcomes: Record<IdempotencyOutcome, Counter.Internal>;
  private readonly statusQueries: Record<StatusState, Counter.Internal>;

  constructor(
    private readonly registry: Registry,
    inFlight?: { countKeysInFlight(): Promise<number> },
  ) {
    const registers = [registry];
    const outcomes = new Counter({
      name: 'tickets_idempotency_outcomes_total',
      help: 'Requests with an Idempotency-Key by outcome: new (ran now), replay (answered from the stored key), in_use (409), reused (422), expired (410), deduplicated (an existing ticket with the same externalRef)',
      labelNames: ['outcome'],
      registers,
    });
    this.outcomes = Object.fromEntries(IDEMPOTENCY_OUTCOMES.map((o) => [o, outcomes.labels(o)])) as Record<
      IdempotencyOutcome,
      Counter.Internal
    >;
    const status = new Counter({
      name: 'tickets_idempotency_status_queries_total',
      help: 'GET /v1/idempotency-keys/{key} answers by state (what callers ask after a timeout; many means the create timeout is too short)',
      labelNames: ['state'],
      registers,
    });
    const states: StatusState[] = ['processing', 'completed', 'expired', 'not_found'];
    this.statusQueries = Object.fromEntries(states.map((s) => [s, status.labels(s)])) as Record<
      StatusState,
      Counter.Internal
    >;
    if (!inFlight) return;
    let last: { at: number; value: number } | undefined;
    let reading: Promise<void> | undefined;
    new Gauge({
      name: 'tickets_idempotency_keys_in_flight',
      help: 'Idempotency keys whose first request is running now, in the whole database (their in-flight lock is held); the same value from every API process',
      registers,
      async collect() {
        if (!last || performance.now() - last.at >= IN_FLIGHT_CACHE_MS) {
          reading ??= inFlight
            .countKeysInFlight()
            .then((value) => void (last = { at: performance.now(), value }))
            .catch(() => undefined) // the database is down: keep the last value
            .finally(() => (reading = undefined));
          await reading;
        }
        if (last) this.set(last.value);
      },
    });
  }

  /** How full the in-process replay cache is, read at scrape time (for sizing IDEMPOTENCY_REPLAY_CACHE_SIZE and _MB). */
  watchReplayCache(cache: { size(): { entries: number; chars: number } }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'tickets_idempotency_replay_cache_entries',
      help: 'Committed answers held in this API process for replays without a database round trip (bounded by IDEMPOTENCY_REPLAY_CACHE_SIZE)',
      registers,
      collect() {
        this.set(cache.size().entries);
      },
    });
    new Gauge({
      name: 'tickets_idempotency_replay_cache_body_chars',
      help: 'Characters of the response bodies that cache holds (bounded by IDEMPOTENCY_REPLAY_CACHE_MB x 2^20); about 4 bytes of peak RSS each',
      registers,
      collect() {
        this.set(cache.size().chars);
      },
    });
  }

  /** A keyed request answered: from the key's store (replay), by an existing ticket (deduplicated), or by running now. */
  answered(fromStore: boolean, outcome: string): void {
    this.outcomes[fromStore ? 'replay' : outcome === 'deduplicated' ? 'deduplicated' : 'new'].inc();
  }

  /** A keyed request that failed: counted when the key refused it (409, 422, 410); other failures are not outcomes of the key. */
  failed(error: unknown): void {
    const outcome = error instanceof DomainError ? REFUSALS[error.code] : undefined;
    if (outcome) this.outcomes[outcome].inc();
  }

  statusQuery(state: StatusState): void {
    this.statusQueries[state].inc();
  }
}
