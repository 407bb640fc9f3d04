import { Registry } from 'prom-client';
import { DomainError } from '@tickets/errors';
import { InMemoryStore, createCommand, ticketCommands } from '../../test/in-memory-store.fake';
import { IDEMPOTENCY_OUTCOMES, IdempotencyMetrics } from './idempotency.metrics';

// Every outcome of a keyed command is counted once under its own label (fake repositories, the
// runner's real code path), and nothing else is.
const TENANT = '00000000-0000-4000-8000-000000000003';
const command = (key: string, body: Record<string, unknown>) => createCommand(TENANT, key, body);

async function outcomes(registry: Registry): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('tickets_idempotency_outcomes_total')!.get();
  return Object.fromEntries(metric.values.filter((v) => v.value > 0).map((v) => [v.labels.outcome, v.value]));
}

describe('tickets_idempotency_outcomes_total, counted by IdempotentCommandRunner', () => {
  let store: InMemoryStore;
  beforeEach(() => {
    store = new InMemoryStore();
  });

  it('new, then replay from the in-process cache and from the key store of another process', async () => {
    const a = ticketCommands(store);
    await a.create.execute(command('k1', { title: 'one' }));
    await a.create.execute(command('k1', { title: 'one' }));
    expect(await outcomes(a.registry)).toEqual({ new: 1, replay: 1 });
    const b = ticketCommands(store);
    await b.create.execute(command('k1', { title: 'one' }));
    expect(await outcomes(b.registry)).toEqual({ replay: 1 });
  });

  it('deduplicated by externalRef under a new key; its retry is a replay', async () => {
    const { create, registry } = ticketCommands(store);
    await create.execute(command('k1', { title: 'one', externalRef: 'INC-1' }));
    await create.execute(command('k2', { title: 'again', externalRef: 'INC-1' }));
    await create.execute(command('k2', { title: 'again', externalRef: 'INC-1' }));
    expect(await outcomes(registry)).toEqual({ new: 1, deduplicated: 1, replay: 1 });
  });

  it('in_use (409), reused (422) and expired (410); the cancel path counts too', async () => {
    const { create, cancel, registry } = ticketCommands(store);
    store.heldLocks.add(InMemoryStore.id(TENANT, 'busy'));
    await expect(create.execute(command('busy', { title: 'x' }))).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
    });
    const first = await create.execute(command('k1', { title: 'one' }));
    await expect(create.execute(command('k1', { title: 'other' }))).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
    store.keys.get(InMemoryStore.id(TENANT, 'k1'))!.replayUntil = new Date(Date.now() - 1);
    const later = ticketCommands(store);
    await expect(later.create.execute(command('k1', { title: 'one' }))).rejects.toMatchObject({
      code: 'idempotency_key_expired',
    });
    expect(await outcomes(later.registry)).toEqual({ expired: 1 });
    await cancel.execute({
      tenantId: TENANT,
      ticketId: first.answer.ticketId,
      idempotencyKey: 'c1',
      input: {},
      traceparent: 'x',
      correlationId: 'r',
    } as never);
    expect(await outcomes(registry)).toEqual({ in_use: 1, new: 2, reused: 1 });
  });

  it('a failure that is no decision of the key (an unknown ticket, a database error) is not counted', async () => {
    const registry = new Registry();
    const metrics = new IdempotencyMetrics(registry);
    metrics.failed(new DomainError('ticket_not_found', 'no'));
    metrics.failed(new Error('connection refused'));
    expect(await outcomes(registry)).toEqual({});
    expect(IDEMPOTENCY_OUTCOMES).toEqual(['new', 'replay', 'in_use', 'reused', 'expired', 'deduplicated']);
  });
});

describe('tickets_idempotency_keys_in_flight', () => {
  it('reads the count at scrape time, once per 2 s however often it is scraped, and keeps the last value while the read fails', async () => {
    const registry = new Registry();
    let reads = 0;
    let fail = false;
    new IdempotencyMetrics(registry, {
      countKeysInFlight: async () => {
        reads++;
        if (fail) throw new Error('database down');
        return 7;
      },
    });
    const scrape = async () =>
      (await registry.getSingleMetric('tickets_idempotency_keys_in_flight')!.get()).values[0]?.value;
    jest.useFakeTimers();
    try {
      expect(await scrape()).toBe(7);
      expect(await scrape()).toBe(7);
      expect(reads).toBe(1);
      jest.advanceTimersByTime(2_001);
      fail = true;
      expect(await scrape()).toBe(7);
      expect(reads).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('the replay cache gauges', () => {
  it("read the runner's cache at scrape time: entries and body characters", async () => {
    const { create, registry } = ticketCommands(new InMemoryStore());
    const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    expect(await value('tickets_idempotency_replay_cache_entries')).toBe(0);
    const first = await create.execute(command('k1', { title: 'one' }));
    const second = await create.execute(command('k2', { title: 'a longer title' }));
    expect(await value('tickets_idempotency_replay_cache_entries')).toBe(2);
    expect(await value('tickets_idempotency_replay_cache_body_chars')).toBe(
      first.answer.body.length + second.answer.body.length,
    );
  });
});
