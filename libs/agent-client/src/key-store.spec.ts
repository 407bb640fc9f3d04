import { InMemoryKeyStore, underIntentLock, type IdempotencyKeyStore } from './key-store';

/** A store that shares its entries under `name`, as FileKeyStores on one file do. */
const sharedStore = (name: string): IdempotencyKeyStore =>
  Object.assign(new InMemoryKeyStore(), { sharedAs: name }) as IdempotencyKeyStore;

/** Runs two calls of one intent at once through the two stores' locks; returns the order they ran in. */
async function twoAtOnce(a: IdempotencyKeyStore, b: IdempotencyKeyStore): Promise<string[]> {
  const order: string[] = [];
  const call = (store: IdempotencyKeyStore, who: string) =>
    underIntentLock(store, 'create:x', async () => {
      order.push(`${who} in`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(`${who} out`);
    });
  await Promise.all([call(a, 'a'), call(b, 'b')]);
  return order;
}

describe('underIntentLock', () => {
  it('one store: calls of one intent take turns; different stores do not wait for each other', async () => {
    const store = new InMemoryKeyStore();
    expect(await twoAtOnce(store, store)).toEqual(['a in', 'a out', 'b in', 'b out']);
    expect(await twoAtOnce(new InMemoryKeyStore(), new InMemoryKeyStore())).toEqual(['a in', 'b in', 'a out', 'b out']);
  });

  it('two stores of one shared name take turns, also after the lock was dropped while idle and made again', async () => {
    for (let round = 0; round < 3; round += 1) {
      expect(await twoAtOnce(sharedStore('file:/tmp/keys.json'), sharedStore('file:/tmp/keys.json'))).toEqual([
        'a in',
        'a out',
        'b in',
        'b out',
      ]);
    }
    expect(await twoAtOnce(sharedStore('file:/a'), sharedStore('file:/b'))).toEqual(['a in', 'b in', 'a out', 'b out']);
  });

  it('a call that throws releases the lock for the next', async () => {
    const store = new InMemoryKeyStore();
    const failing = underIntentLock(store, 'create:y', () => Promise.reject(new Error('disk full')));
    const next = underIntentLock(store, 'create:y', async () => 'ran');
    await expect(failing).rejects.toThrow('disk full');
    await expect(next).resolves.toBe('ran');
  });
});
