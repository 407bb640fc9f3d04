import { Inject, Injectable } from '@nestjs/common';
import type { EdgeConfig } from '@tickets/config';
import { DomainError } from '@tickets/errors';
import { TokenBuckets } from './token-bucket';

export const EDGE_CONFIG = Symbol('EDGE_CONFIG');

/** Which budget paid for one database lookup of an API key (see EdgeLimits.reserveLookup). */
export type LookupGrant = 'address' | 'overflow';

/**
 * The API's request-rate rules, in this process's memory (each API process limits on its own; with N
 * processes behind a balancer a tenant gets up to N times the configured rate).
 * - per tenant: a token bucket, so one tenant flooding the API cannot starve the others or the database;
 * - database lookups of keys not in the resolver's cache: per client address (AUTH_FAILURES_*), then,
 *   past that, a small budget for the whole process (AUTH_OVERFLOW_LOOKUPS_PER_SECOND); a lookup that
 *   finds its key gives its token back, so only failures use up a budget;
 * - unknown keys are remembered for a few seconds, so repeating one costs no query.
 * A key in the resolver's cache never reaches these budgets: other clients' failures cannot refuse it.
 */
@Injectable()
export class EdgeLimits {
  private readonly tenants: TokenBuckets;
  private readonly failures: TokenBuckets;
  private readonly overflow?: TokenBuckets;
  private readonly unknownKeys = new Map<string, number>();

  constructor(@Inject(EDGE_CONFIG) private readonly config: EdgeConfig) {
    const { rateLimit, authFailures } = config;
    this.tenants = new TokenBuckets(rateLimit.perSecond, rateLimit.burst);
    this.failures = new TokenBuckets(authFailures.perSecond, authFailures.burst);
    if (authFailures.overflowPerSecond > 0)
      this.overflow = new TokenBuckets(authFailures.overflowPerSecond, Math.max(1, authFailures.overflowPerSecond));
  }

  /** Throws 429 rate_limited when the tenant is over its rate. */
  admitTenant(tenantId: string): void {
    const t = this.tenants.take(tenantId);
    if (!t.ok)
      throw new DomainError(
        'rate_limited',
        'Your tenant is over its request rate (RATE_LIMIT_PER_SECOND): wait Retry-After seconds, or ask the operator for a higher limit.',
        {},
        t.retryAfterSeconds,
      );
  }

  /**
   * Takes a token for one database lookup of a key from `address`: from the address's budget, else from
   * the process's overflow budget. Throws 429 rate_limited when both are used up. Settle the grant with
   * lookupFound or lookupFailed.
   */
  reserveLookup(address: string, now = Date.now()): LookupGrant {
    const own = this.failures.take(address, now);
    if (own.ok) return 'address';
    if (this.overflow?.take('*', now).ok) return 'overflow';
    throw new DomainError(
      'rate_limited',
      'Too many failed API-key lookups from your address: keys this process has already seen are still served; check the key, or wait Retry-After seconds.',
      {},
      own.retryAfterSeconds,
    );
  }

  /** The lookup found its key: the token goes back (a valid key never uses up a failure budget). */
  lookupFound(address: string, grant: LookupGrant, now = Date.now()): void {
    if (grant === 'address') this.failures.refund(address, now);
    else this.overflow?.refund('*', now);
  }

  /** The lookup failed: the token stays spent, and the key is remembered as unknown. */
  lookupFailed(secret: string, now = Date.now()): void {
    if (this.config.authFailures.negativeCacheTtlMs <= 0) return;
    if (this.unknownKeys.size >= 10_000) this.unknownKeys.clear();
    this.unknownKeys.set(secret, now + this.config.authFailures.negativeCacheTtlMs);
  }

  /** Whether `secret` failed a lookup within AUTH_NEGATIVE_CACHE_TTL (only failed secrets are held). */
  isKnownUnknown(secret: string, now = Date.now()): boolean {
    const until = this.unknownKeys.get(secret);
    if (until === undefined) return false;
    if (until > now) return true;
    this.unknownKeys.delete(secret);
    return false;
  }
}
