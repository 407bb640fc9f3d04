import { Inject, Injectable } from '@nestjs/common';
import type { EdgeConfig } from '@tickets/config';
import { DomainError } from '@tickets/errors';
import { TokenBuckets } from './token-bucket';

export const EDGE_CONFIG = Symbol('EDGE_CONFIG');

/**
 * The API's request-rate rules, in this process's memory (each API process limits on its own; with N
 * processes behind a balancer a tenant gets up to N times the configured rate).
 * - per tenant: a token bucket, so one tenant flooding the API cannot starve the others;
 * - per client address: failed API-key lookups, so guessing keys cannot turn into a database load;
 * - unknown keys are remembered for a few seconds, so repeating one costs no query.
 */
@Injectable()
export class EdgeLimits {
  private readonly tenants: TokenBuckets;
  private readonly failures: TokenBuckets;
  private readonly unknownKeys = new Map<string, number>();

  constructor(@Inject(EDGE_CONFIG) private readonly config: EdgeConfig) {
    this.tenants = new TokenBuckets(config.rateLimit.perSecond, config.rateLimit.burst);
    this.failures = new TokenBuckets(config.authFailures.perSecond, config.authFailures.burst);
  }

  /** Throws 429 rate_limited when the tenant is over its rate. */
  admitTenant(tenantId: string): void {
    const t = this.tenants.take(tenantId);
    if (!t.ok)
      throw new DomainError(
        'rate_limited',
        'Your tenant is over its request rate (RATE_LIMIT_PER_SECOND).',
        {},
        t.retryAfterSeconds,
      );
  }

  /** Throws 429 rate_limited when this address has used up its failed-lookup budget. */
  admitKeyLookup(address: string): void {
    const t = this.failures.peek(address);
    if (!t.ok)
      throw new DomainError(
        'rate_limited',
        'Too many failed API-key lookups from your address.',
        {},
        t.retryAfterSeconds,
      );
  }

  /** Whether `secret` failed a lookup within AUTH_NEGATIVE_CACHE_TTL (only failed secrets are held). */
  isKnownUnknown(secret: string, now = Date.now()): boolean {
    const until = this.unknownKeys.get(secret);
    if (until === undefined) return false;
    if (until > now) return true;
    this.unknownKeys.delete(secret);
    return false;
  }

  /** Records a failed lookup: costs the address a token, remembers the key as unknown. */
  recordFailedLookup(address: string, secret: string, now = Date.now()): void {
    this.failures.take(address, now);
    if (this.config.authFailures.negativeCacheTtlMs <= 0) return;
    if (this.unknownKeys.size >= 10_000) this.unknownKeys.clear();
    this.unknownKeys.set(secret, now + this.config.authFailures.negativeCacheTtlMs);
  }
}
