/** Outcome of one `take`: allowed, or refused with the whole seconds until a token is back. */
export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * Token buckets keyed by a string (tenant id, client address), in this process's memory. Each key
 * holds up to `burst` tokens and regains `perSecond` per second; `perSecond` 0 means no limit. The map
 * is bounded: past `maxKeys` it is cleared, which only ever forgives (a cleared key starts full).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly maxKeys = 100_000,
  ) {}

  get unlimited(): boolean {
    return this.perSecond <= 0;
  }

  /** Takes one token for `key`. */
  take(key: string, now = Date.now()): Take {
    if (this.unlimited) return { ok: true };
    const b = this.refill(key, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond)) };
  }

  /** Whether `key` has a token left, without taking it. */
  peek(key: string, now = Date.now()): Take {
    if (this.unlimited) return { ok: true };
    const b = this.buckets.get(key) ? this.refill(key, now) : undefined;
    if (!b || b.tokens >= 1) return { ok: true };
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond)) };
  }

  /** Gives back a token taken for `key` (up to the burst): the action it paid for turned out to be free. */
  refund(key: string, now = Date.now()): void {
    if (this.unlimited || !this.buckets.has(key)) return;
    const b = this.refill(key, now);
    b.tokens = Math.min(this.burst, b.tokens + 1);
  }

  private refill(key: string, now: number): { tokens: number; at: number } {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.buckets.clear();
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
      return b;
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    return b;
  }
}
