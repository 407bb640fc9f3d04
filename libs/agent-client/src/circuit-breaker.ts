import { withDefaults } from './with-defaults';
export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. Default 5. */
  failureThreshold: number;
  /** Failure rate over the last `windowSize` results that opens it (0..1]. Default 0.5. */
  failureRateThreshold: number;
  /** Results remembered for the failure rate. Default 20. */
  windowSize: number;
  /** Results needed in the window before the rate counts. Default 10. */
  minimumCalls: number;
  /**
   * Consecutive lost exchanges (connection closed after the request left, before any byte of the
   * answer) with no answer in between that open the circuit. A lost answer alone is not a failure:
   * on a lossy link the server did the work. Default 10 (at 30 % loss: about once in 170,000 exchanges).
   */
  lostThreshold: number;
  /** How long the circuit stays open before one probe is let through. Default 2 s. */
  coolDownMs: number;
}

export const defaultCircuitBreaker: CircuitBreakerOptions = {
  failureThreshold: 5,
  failureRateThreshold: 0.5,
  windowSize: 20,
  minimumCalls: 10,
  lostThreshold: 10,
  coolDownMs: 2_000,
};

/** Permission to send one request; report how it went exactly once. */
export interface BreakerPermit {
  /** The server answered (any status that is not a server failure). */
  success(): void;
  /** The server did not answer: connection refused, a timeout before any byte of the answer, or a 5xx. */
  failure(): void;
  /**
   * The connection closed after the request left and before any byte of the answer: the server may
   * well have done the work. Neutral, except that `lostThreshold` of them in a row open the circuit.
   */
  lost(): void;
  /** The request was abandoned by the caller: counts neither way, frees the half-open probe slot. */
  release(): void;
}

export type BreakerStateListener = (from: CircuitState, to: CircuitState) => void;

/**
 * Circuit breaker for one base URL. closed: requests flow and results are counted; open: every
 * request is refused until the cool-down ends; half-open: exactly one probe goes through, its
 * success closes the circuit and its failure opens it again for another cool-down.
 * Results from permits issued before the latest state change are ignored, so a slow request
 * started while closed cannot close a circuit that has since opened.
 */
export class CircuitBreaker {
  private readonly options: CircuitBreakerOptions;
  private current: CircuitState = 'closed';
  private generation = 0;
  private consecutiveFailures = 0;
  private consecutiveLost = 0;
  private window: boolean[] = [];
  private openedAt = 0;
  private probeInFlight = false;
  private readonly listeners: BreakerStateListener[] = [];

  constructor(
    options: Partial<CircuitBreakerOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.options = withDefaults(defaultCircuitBreaker, options);
  }

  get state(): CircuitState {
    if (this.current === 'open' && this.now() - this.openedAt >= this.options.coolDownMs) {
      this.transition('half-open');
    }
    return this.current;
  }

  onStateChange(listener: BreakerStateListener): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  /** Milliseconds until an open circuit lets a probe through (0 unless open). */
  retryAfterMs(): number {
    if (this.state !== 'open') return 0;
    return Math.max(0, this.openedAt + this.options.coolDownMs - this.now());
  }

  /** A permit to send, or null when the request must fail fast. */
  acquire(): BreakerPermit | null {
    const state = this.state;
    if (state === 'open') return null;
    if (state === 'half-open') {
      if (this.probeInFlight) return null;
      this.probeInFlight = true;
    }
    return this.permit(this.generation, state === 'half-open');
  }

  private permit(generation: number, isProbe: boolean): BreakerPermit {
    let settled = false;
    const settle = (result: 'success' | 'failure' | 'lost' | 'release'): void => {
      if (settled) return;
      settled = true;
      if (generation !== this.generation) return;
      if (isProbe) this.probeInFlight = false;
      if (result === 'success') this.recordSuccess();
      else if (result === 'failure') this.recordFailure();
      else if (result === 'lost') this.recordLost();
    };
    return {
      success: () => settle('success'),
      failure: () => settle('failure'),
      lost: () => settle('lost'),
      release: () => settle('release'),
    };
  }

  private recordSuccess(): void {
    if (this.current === 'half-open') {
      this.transition('closed');
      return;
    }
    this.consecutiveFailures = 0;
    this.consecutiveLost = 0;
    this.remember(false);
  }

  /** Neither success nor failure in the window: only a long enough streak of them opens the circuit. */
  private recordLost(): void {
    this.consecutiveLost += 1;
    if (this.consecutiveLost >= this.options.lostThreshold) this.transition('open');
  }

  private recordFailure(): void {
    if (this.current === 'half-open') {
      this.transition('open');
      return;
    }
    this.consecutiveFailures += 1;
    this.remember(true);
    const failures = this.window.filter(Boolean).length;
    const rateTripped =
      this.window.length >= this.options.minimumCalls &&
      failures / this.window.length >= this.options.failureRateThreshold;
    if (this.consecutiveFailures >= this.options.failureThreshold || rateTripped) this.transition('open');
  }

  private remember(failed: boolean): void {
    this.window.push(failed);
    if (this.window.length > this.options.windowSize) this.window.shift();
  }

  private transition(to: CircuitState): void {
    const from = this.current;
    if (from === to) return;
    this.current = to;
    this.generation += 1;
    this.probeInFlight = false;
    if (to === 'open') this.openedAt = this.now();
    if (to === 'closed') {
      this.consecutiveFailures = 0;
      this.consecutiveLost = 0;
      this.window = [];
    }
    for (const listener of [...this.listeners]) {
      try {
        listener(from, to);
      } catch {
        // A logging hook must never break the breaker.
      }
    }
  }
}
