import { randomUUID } from 'node:crypto';
import { ticketEventRow } from '../../../test/support/outbox-factory';
import { BLOCKED_PREFIX, planOutboxRequeue, type OutboxDeadRow } from './outbox-requeue-plan';

const ticket = randomUUID();

/** A valid dead letter of `ticket` (the test factory's envelope), or one whose payload is `payloadOverride`. */
function row(seq: number, reason: string, payloadOverride?: string): OutboxDeadRow {
  const spec = ticketEventRow({ tenantId: randomUUID(), ticketId: ticket, kind: 'cancelled' });
  const payload = payloadOverride ?? JSON.stringify(spec.payload);
  return {
    seq: String(seq),
    eventId: spec.eventId,
    aggregateId: ticket,
    eventType: spec.eventType,
    payload,
    headers: spec.headers,
    reason,
    attempts: 1,
  };
}

describe('planOutboxRequeue', () => {
  const head = row(10, 'kafka_rejected: MESSAGE_TOO_LARGE');
  const blocked1 = row(11, `${BLOCKED_PREFIX}${head.eventId}`);
  const blocked2 = row(15, `${BLOCKED_PREFIX}${head.eventId}`);

  it('the earliest dead letter goes back with the rows dead-lettered behind it, in seq order', () => {
    expect(planOutboxRequeue([head, blocked1, blocked2], head.eventId)).toEqual({
      kind: 'requeue',
      rows: [head, blocked1, blocked2],
    });
  });

  it('stops at the next row of the ticket that failed on its own', () => {
    const own = row(12, 'invalid_envelope: data.priority: Invalid option');
    expect(planOutboxRequeue([head, blocked1, own, blocked2], head.eventId)).toEqual({
      kind: 'requeue',
      rows: [head, blocked1],
    });
  });

  it('a later dead letter is held back by the earliest one of its ticket', () => {
    expect(planOutboxRequeue([head, blocked1, blocked2], blocked2.eventId)).toEqual({ kind: 'held-back', by: head });
  });

  it('after the head was discarded, the rows behind it go back together', () => {
    expect(planOutboxRequeue([blocked1, blocked2], blocked1.eventId)).toEqual({
      kind: 'requeue',
      rows: [blocked1, blocked2],
    });
  });

  it('not dead when the event is not among the dead letters (already requeued or discarded)', () => {
    expect(planOutboxRequeue([], head.eventId)).toEqual({ kind: 'not-dead' });
  });

  it("refuses when a row would fail the relay's validation again", () => {
    const broken = row(10, 'invalid_envelope: payload is not JSON', '{"half":');
    const plan = planOutboxRequeue([broken, blocked1], broken.eventId);
    expect(plan).toEqual({ kind: 'invalid', rows: [{ row: broken, reason: 'invalid_envelope: payload is not JSON' }] });
  });
});
