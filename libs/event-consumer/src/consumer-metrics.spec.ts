import { ConsumerMetrics, MAX_UNKNOWN_TYPES } from './consumer-metrics';

/** The `type` labels of event_consumer_unknown_skipped_total, with their counts. */
async function unknownByType(metrics: ConsumerMetrics): Promise<Record<string, number>> {
  const { values } = await metrics.unknown.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.type), v.value]));
}

describe('event_consumer_unknown_skipped_total{type}', () => {
  it('labels a type shaped like an event type by its name', async () => {
    const metrics = new ConsumerMetrics();
    metrics.countUnknown('g', 'ticket.archived.v9');
    metrics.countUnknown('g', 'ticket.archived.v9');
    expect(await unknownByType(metrics)).toEqual({ 'ticket.archived.v9': 2 });
  });

  it('counts a producer’s garbage as other: too long, upper case, spaces, control characters, empty', async () => {
    const metrics = new ConsumerMetrics();
    for (const type of ['x'.repeat(101), 'Ticket.Created.V1', 'ticket created', 'a\nb', '', 'é'])
      metrics.countUnknown('g', type);
    metrics.countUnknown('g', 'x'.repeat(100));
    expect(await unknownByType(metrics)).toEqual({ other: 6, ['x'.repeat(100)]: 1 });
  });

  it(`labels at most ${MAX_UNKNOWN_TYPES} distinct types per process; later new ones count as other`, async () => {
    const metrics = new ConsumerMetrics();
    for (let i = 0; i < MAX_UNKNOWN_TYPES + 20; i++) metrics.countUnknown('g', `ticket.t${i}.v1`);
    metrics.countUnknown('g', 'ticket.t0.v1'); // one already labelled keeps its label
    const byType = await unknownByType(metrics);
    expect(Object.keys(byType)).toHaveLength(MAX_UNKNOWN_TYPES + 1);
    expect(byType).toMatchObject({ other: 20, 'ticket.t0.v1': 2, [`ticket.t${MAX_UNKNOWN_TYPES - 1}.v1`]: 1 });
  });
});
