/**
 * Remembers the idempotency key of every unfinished intent (intent → key), so a retry of the
 * same intent, even from a restarted process, sends the same key. The client removes an entry once
 * the intent has a definite outcome (a ticket, or a permanent error).
 */
export interface IdempotencyKeyStore {
  get(intent: string): Promise<string | undefined>;
  set(intent: string, key: string): Promise<void>;
  delete(intent: string): Promise<void>;
}

/** Process-lifetime store: survives retries within one process, not a restart. */
export class InMemoryKeyStore implements IdempotencyKeyStore {
  private readonly keys = new Map<string, string>();

  async get(intent: string): Promise<string | undefined> {
    return this.keys.get(intent);
  }

  async set(intent: string, key: string): Promise<void> {
    this.keys.set(intent, key);
  }

  async delete(intent: string): Promise<void> {
    this.keys.delete(intent);
  }
}
