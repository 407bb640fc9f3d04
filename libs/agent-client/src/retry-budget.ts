import { withDefaults } from './with-defaults';
export interface RetryBudgetOptions {
  /** Tokens earned per first attempt: 0.1 lets retries add at most ~10% to the load. Default 0.1. */
  ratio: number;
  /** Tokens earned per second regardless of traffic, so a quiet client can still retry. Default 1. */
  minRetriesPerSecond: number;
  /** Most tokens that can pile up (the burst of retries allowed after a quiet spell). Default 10. */
  maxTokens: number;
}

export const defaultRetryBudget: RetryBudgetOptions = { ratio: 0.1, minRetriesPerSecond: 1, maxTokens: 10 };

/**
 * Client-wide retry budget (a token bucket, as in Finagle and gRPC): every original request
 * deposits `ratio` tokens, time deposits `minRetriesPerSecond`, every retry withdraws one. During an
 * outage the bucket drains and retries stop, so N agents cannot turn one failing request each into
 * N x maxAttempts requests. Share one instance between clients to budget a whole process.
 */
export class RetryBudget {
  private readonly options: RetryBudgetOptions;
  private tokens: number;
  private lastRefillAt: number;

  constructor(
    options: Partial<RetryBudgetOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.options = withDefaults(defaultRetryBudget, options);
    if (!(this.options.ratio >= 0) || !(this.options.minRetriesPerSecond >= 0) || !(this.options.maxTokens >= 1)) {
      throw new RangeError('RetryBudget needs ratio >= 0, minRetriesPerSecond >= 0 and maxTokens >= 1');
    }
    this.tokens = this.options.maxTokens;
    this.lastRefillAt = now();
  }

  /** Call once per original request (not per retry). */
  recordRequest(): void {
    this.refill();
    this.tokens = Math.min(this.options.maxTokens, this.tokens + this.options.ratio);
  }

  /** Takes one token for a retry; false means the budget is spent and the retry must not happen. */
  tryAcquireRetry(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until a retry token is available (0 now; Infinity when time deposits nothing). */
  msUntilToken(): number {
    this.refill();
    if (this.tokens >= 1) return 0;
    if (this.options.minRetriesPerSecond <= 0) return Number.POSITIVE_INFINITY;
    return Math.ceil(((1 - this.tokens) / this.options.minRetriesPerSecond) * 1000);
  }

  /** Tokens currently available (for metrics and tests). */
  available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const at = this.now();
    const elapsedMs = Math.max(0, at - this.lastRefillAt);
    this.lastRefillAt = at;
    this.tokens = Math.min(this.options.maxTokens, this.tokens + (elapsedMs / 1000) * this.options.minRetriesPerSecond);
  }
}
