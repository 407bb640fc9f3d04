import type { TicketEvent } from '@tickets/contracts';

export interface CountDelta {
  tenantId: string;
  dimension: 'status' | 'priority';
  value: string;
  delta: number;
}

export interface DayDelta {
  tenantId: string;
  /** UTC date of the event's occurredAt, YYYY-MM-DD. */
  day: string;
  created: number;
  cancelled: number;
}

/**
 * What a chunk of events changes in the projection, summed per row. A cancel moves one ticket from
 * open to cancelled: the API emits ticket.cancelled.v1 only when the ticket was not cancelled yet, and
 * the two statuses are all there are, so the previous status is always `open`. Priority never changes.
 */
export function projectEvents(events: readonly TicketEvent[]): { counts: CountDelta[]; days: DayDelta[] } {
  const counts = new Map<string, CountDelta>();
  const days = new Map<string, DayDelta>();
  const count = (tenantId: string, dimension: CountDelta['dimension'], value: string, delta: number) => {
    const k = `${tenantId}|${dimension}|${value}`;
    const row = counts.get(k) ?? counts.set(k, { tenantId, dimension, value, delta: 0 }).get(k)!;
    row.delta += delta;
  };
  const day = (tenantId: string, occurredAt: string) => {
    const d = occurredAt.slice(0, 10); // ISO-8601 in UTC (z.iso.datetime() admits no offset)
    const k = `${tenantId}|${d}`;
    return days.get(k) ?? days.set(k, { tenantId, day: d, created: 0, cancelled: 0 }).get(k)!;
  };
  for (const e of events) {
    if (e.type === 'ticket.created.v1') {
      count(e.tenantId, 'status', e.data.status, 1);
      count(e.tenantId, 'priority', e.data.priority, 1);
      day(e.tenantId, e.occurredAt).created++;
    } else {
      count(e.tenantId, 'status', 'open', -1);
      count(e.tenantId, 'status', 'cancelled', 1);
      day(e.tenantId, e.occurredAt).cancelled++;
    }
  }
  return { counts: [...counts.values()].filter((c) => c.delta !== 0), days: [...days.values()] };
}
