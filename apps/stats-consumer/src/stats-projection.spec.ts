import { randomUUID } from 'node:crypto';
import type { TicketEvent } from '@tickets/contracts';
import { projectEvents } from './stats-projection';

const tenant = randomUUID();
const event = (type: TicketEvent['type'], priority: 'low' | 'high', occurredAt: string): TicketEvent =>
  ({
    id: randomUUID(),
    type,
    occurredAt,
    tenantId: tenant,
    ticketId: randomUUID(),
    idempotencyKey: 'k',
    data: { priority, status: type === 'ticket.created.v1' ? 'open' : 'cancelled' },
  }) as unknown as TicketEvent;

describe('projectEvents', () => {
  it('sums a chunk per row: created counts status open and its priority, a cancel moves open to cancelled', () => {
    const { counts, days } = projectEvents([
      event('ticket.created.v1', 'high', '2026-11-29T23:59:59.999Z'),
      event('ticket.created.v1', 'low', '2026-11-30T00:00:00.000Z'),
      event('ticket.created.v1', 'high', '2026-11-30T10:00:00.000Z'),
      event('ticket.cancelled.v1', 'high', '2026-11-30T11:00:00.000Z'),
    ]);
    expect(counts).toEqual(
      expect.arrayContaining([
        { tenantId: tenant, dimension: 'status', value: 'open', delta: 2 },
        { tenantId: tenant, dimension: 'status', value: 'cancelled', delta: 1 },
        { tenantId: tenant, dimension: 'priority', value: 'high', delta: 2 },
        { tenantId: tenant, dimension: 'priority', value: 'low', delta: 1 },
      ]),
    );
    expect(counts).toHaveLength(4);
    expect(days).toEqual([
      { tenantId: tenant, day: '2026-11-29', created: 1, cancelled: 0 },
      { tenantId: tenant, day: '2026-11-30', created: 2, cancelled: 1 },
    ]);
  });

  it('drops rows whose changes cancel out within the chunk', () => {
    const { counts } = projectEvents([
      event('ticket.created.v1', 'low', '2026-11-30T00:00:00.000Z'),
      event('ticket.cancelled.v1', 'low', '2026-11-30T00:00:01.000Z'),
    ]);
    expect(counts.find((c) => c.value === 'open')).toBeUndefined();
  });
});
