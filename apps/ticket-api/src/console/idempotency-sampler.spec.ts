import { Counter, Registry } from 'prom-client';
import { IDEMPOTENCY_OUTCOMES_METRIC, IdempotencySampler } from './idempotency-sampler';

describe('IdempotencySampler', () => {
  it('says the metric is missing while the registry has no such counter (no made-up data)', async () => {
    const sampler = new IdempotencySampler(new Registry());
    await sampler.sample();
    expect(await sampler.history()).toEqual({ state: 'missing', metric: IDEMPOTENCY_OUTCOMES_METRIC });
  });

  it('charts per-interval deltas by outcome, the running interval last, keeping `keep` intervals', async () => {
    const registry = new Registry();
    const c = new Counter({
      name: IDEMPOTENCY_OUTCOMES_METRIC,
      help: 'h',
      labelNames: ['outcome'],
      registers: [registry],
    });
    const sampler = new IdempotencySampler(registry, 2);
    c.inc({ outcome: 'new' }, 5);
    await sampler.sample(0);
    c.inc({ outcome: 'new' }, 3);
    c.inc({ outcome: 'replay' }, 2);
    await sampler.sample(60_000);
    c.inc({ outcome: 'in_use' });
    await sampler.sample(120_000);
    c.inc({ outcome: 'new' });
    await sampler.sample(180_000);
    c.inc({ outcome: 'replay' }, 4);
    const h = await sampler.history(200_000);
    expect(h).toEqual({
      state: 'ok',
      outcomes: ['in_use', 'new', 'replay'],
      minutes: [
        { at: new Date(60_000), counts: { in_use: 1, new: 0, replay: 0 } },
        { at: new Date(120_000), counts: { in_use: 0, new: 1, replay: 0 } },
        { at: new Date(180_000), counts: { in_use: 0, new: 0, replay: 4 } },
      ],
    });
  });
});
