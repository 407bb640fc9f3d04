import { Registry } from 'prom-client';
import { DispatcherMetrics } from './dispatcher-metrics';

async function series(registry: Registry, name: string) {
  return (await registry.getSingleMetric(name)!.get()).values.map((v) => ({ labels: v.labels, value: v.value }));
}

describe('DispatcherMetrics', () => {
  it('counts each recorded attempt under its outcome and the group, and observes its duration in seconds', async () => {
    const registry = new Registry();
    const m = new DispatcherMetrics(registry, 'g1', { counts: async () => ({ pending: 0, dead: 0 }) });
    m.delivery('delivered', 120);
    m.delivery('delivered', 30);
    m.delivery('retry', 10_000);
    m.delivery('dead', 5);
    expect(await series(registry, 'webhook_deliveries_total')).toEqual([
      { labels: { group: 'g1', outcome: 'delivered' }, value: 2 },
      { labels: { group: 'g1', outcome: 'retry' }, value: 1 },
      { labels: { group: 'g1', outcome: 'dead' }, value: 1 },
    ]);
    const histogram = await series(registry, 'webhook_delivery_duration_seconds');
    expect(histogram).toContainEqual({ labels: { group: 'g1', outcome: 'delivered', le: 0.25 }, value: 2 });
    expect(histogram).toContainEqual({ labels: { group: 'g1', outcome: 'delivered', le: 0.1 }, value: 1 });
    expect(histogram).toContainEqual({ labels: { group: 'g1', outcome: 'retry', le: 10 }, value: 1 });
    expect(histogram).toContainEqual({ labels: { group: 'g1', outcome: 'retry', le: 5 }, value: 0 });
  });

  it('reads pending and dead once per 5 s for both gauges, and keeps the last values while the read fails', async () => {
    const registry = new Registry();
    let reads = 0;
    let fail = false;
    new DispatcherMetrics(registry, 'g1', {
      counts: async () => {
        reads++;
        if (fail) throw new Error('database down');
        return { pending: 4, dead: 2 };
      },
    });
    jest.useFakeTimers();
    try {
      expect(await series(registry, 'notifications_pending')).toEqual([{ labels: { group: 'g1' }, value: 4 }]);
      expect(await series(registry, 'notifications_dead')).toEqual([{ labels: { group: 'g1' }, value: 2 }]);
      expect(reads).toBe(1);
      jest.advanceTimersByTime(5_001);
      fail = true;
      expect(await series(registry, 'notifications_dead')).toEqual([{ labels: { group: 'g1' }, value: 2 }]);
      expect(reads).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
