/**
 * Remembers the idempotency key of every unfinished intent (intent → key), so a retry of the
 * same intent, even from a restarted process, sends the same key. The client removes an entry once
 * the intent has a definite outcome (a ticket, or a permanent error), unless the key is random
 * (`keyStrategy: 'random'`): then the entry is the only way back to the key, and it stays.
 */
export interface IdempotencyKeyStore {
  /**
   * What this store's entries are shared with in this process, when more than this instance (FileKeyStore: every
   * instance on the same file). Clients of stores with one name take turns per intent, as clients of one instance do.
   */
  readonly sharedAs?: string;
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

type IntentLock = <T>(intent: string, fn: () => Promise<T>) => Promise<T>;

const locksOfStores = new WeakMap<IdempotencyKeyStore, IntentLock>();
const locksOfSharedStores = new Map<string, IntentLock>();

/**
 * Runs `fn` under the per-intent lock of a key store, shared by every client that uses the store in this process
 * (and, for a store with `sharedAs`, by every store of that name): two clients on one store that look up the same
 * intent at once would otherwise both find no key and, with random keys, make two. Look the lock up per call: a
 * shared store's lock is dropped while no call holds or waits for it, so a lock kept from an earlier call may no
 * longer be the one other clients use.
 */
export function underIntentLock<T>(store: IdempotencyKeyStore, intent: string, fn: () => Promise<T>): Promise<T> {
  const name = store.sharedAs;
  if (name === undefined) {
    let lock = locksOfStores.get(store);
    if (!lock) locksOfStores.set(store, (lock = oneAtATimePerIntent()));
    return lock(intent, fn);
  }
  let lock = locksOfSharedStores.get(name);
  if (!lock) {
    const created = oneAtATimePerIntent(() => {
      if (locksOfSharedStores.get(name) === created) locksOfSharedStores.delete(name);
    });
    locksOfSharedStores.set(name, (lock = created));
  }
  return lock(intent, fn);
}

/**
 * Runs `fn` for one intent at a time: two calls of the same intent at once would otherwise both find no key
 * and, with random keys, make two. Calls of different intents do not wait for each other. `idle` is called when
 * no call holds or waits for the lock any more.
 */
function oneAtATimePerIntent(idle?: () => void): IntentLock {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(intent: string, fn: () => Promise<T>): Promise<T> => {
    const before = tails.get(intent) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.catch(() => undefined);
    tails.set(intent, tail);
    try {
      return await run;
    } finally {
      if (tails.get(intent) === tail) tails.delete(intent);
      if (tails.size === 0) idle?.();
    }
  };
}
