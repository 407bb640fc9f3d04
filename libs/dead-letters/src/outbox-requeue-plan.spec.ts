import { randomUUID } from 'node:crypto';
import { BLOCKED_PREFIX, planOutboxRequeue, type OutboxDeadRow } from './outbox-requeue-plan';

const ticket = randomUUID();

function row(seq: number, reason: string, payloadOverride?: string): OutboxDeadRow {
  const eventId = randomUUID();
  const now = new Date().toISOString();
  const envelope = {
    id: eventId,
    type: 'ticket.cancelled.v1',
    occurredAt: now,
    tenantId: randomUUID(),
    ticketId: ticket,
    idempotencyKey: 'k',
    correlationId: 'c',
    data: { id: ticket, title: 't', description: null, priority: 'normal', status: 'cancelled', externalRef: null, requester: null, metadata: null, createdAt: now, updatedAt: now },
  };
  return { seq: String(seq), eventId, aggregateId: ticket, eventType: 'ticket.cancelled.v1', payload: payloadOverride ?? JSON.stringify(envelope), headers: {}, reason, attempts: 1 };
}

describe('planOutboxRequeue', () => {
  const head = row(10, 'kafka_rejected: MESSAGE_TOO_LARGE');
  const blocked1 = row(11, `${BLOCKED_PREFIX}${head.eventId}`);
  const blocked2 = row(15, `${BLOCKED_PREFIX}${head.eventId}`);

  it('the earliest dead letter goes back with the rows dead-lettered behind it, in seq order', () => {
    expect(planOutboxRequeue([head, blocked1, blocked2], head.eventId)).toEqual({ kind: 'requeue', rows: [head, blocked1, blocked2] });
  });

  it('stops at the next row of the ticket that failed on its own', () => {
    const own = row(12, 'invalid_envelope: data.priority: Invalid option');
    expect(planOutboxRequeue([head, blocked1, own, blocked2], head.eventId)).toEqual({ kind: 'requeue', rows: [head, blocked1] });
  });

  it('a later dead letter is held back by the earliest one of its ticket', () => {
    expect(planOutboxRequeue([head, blocked1, blocked2], blocked2.eventId)).toEqual({ kind: 'held-back', by: head });
  });

  it('after the head was discarded, the rows behind it go back together', () => {
    expect(planOutboxRequeue([blocked1, blocked2], blocked1.eventId)).toEqual({ kind: 'requeue', rows: [blocked1, blocked2] });
  });

  it('not dead when the event is not among the dead letters (already requeued or discarded)', () => {
    expect(planOutboxRequeue([], head.eventId)).toEqual({ kind: 'not-dead' });
  });

  it('refuses when a row would fail the relay\'s validation again', () => {
    const broken = row(10, 'invalid_envelope: payload is not JSON', '{"half":');
    const plan = planOutboxRequeue([broken, blocked1], broken.eventId);
    expect(plan).toEqual({ kind: 'invalid', rows: [{ row: broken, reason: 'invalid_envelope: payload is not JSON' }] });
  });
});
