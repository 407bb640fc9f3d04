import { setTimeout as sleep } from 'node:timers/promises';
import { TokenBuckets } from '../edge/token-bucket';

/** The process-wide budget is this many times one address's (rate and burst). */
const GLOBAL_FACTOR = 10;

/**
 * The console's budget for wrong admin tokens: per client address (ADMIN_LOGIN_FAILURES_*) and, for
 * guessing spread over many addresses, for the whole process (ten times that). It backs off, it does
 * not block: past either budget every log-in attempt waits up to `maxDelayMs` before its token is
 * compared, and a wrong one gets 429 with Retry-After; the right token still logs in. So no one who
 * shares an address (a proxy) with a guesser is locked out, and each guess holds a connection.
 */
export class LoginBudget {
  private readonly perAddress: TokenBuckets;
  private readonly global: TokenBuckets;

  constructor(
    limit: { perSecond: number; burst: number },
    private readonly maxDelayMs = 2_000,
  ) {
    this.perAddress = new TokenBuckets(limit.perSecond, limit.burst);
    this.global = new TokenBuckets(limit.perSecond * GLOBAL_FACTOR, limit.burst * GLOBAL_FACTOR);
  }

  /** Waits when `address` or the process is past its budget (at most maxDelayMs); resolves at once otherwise. */
  async backOff(address: string): Promise<void> {
    const wait = this.retryAfter(address);
    if (wait > 0) await sleep(Math.min(this.maxDelayMs, wait * 1_000));
  }

  /** Counts one wrong token; returns the seconds to wait when a budget was already used up, else 0. */
  recordFailure(address: string): number {
    const over = this.retryAfter(address) > 0;
    this.perAddress.take(address);
    this.global.take('*');
    return over ? this.retryAfter(address) : 0;
  }

  private retryAfter(address: string): number {
    const a = this.perAddress.peek(address);
    const g = this.global.peek('*');
    return Math.max(a.ok ? 0 : a.retryAfterSeconds, g.ok ? 0 : g.retryAfterSeconds);
  }
}
