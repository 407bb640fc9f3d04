import { randomUUID } from 'node:crypto';
import { TicketCreatedV1 } from '@tickets/contracts';

/** A realistic ticket.created.v1 envelope (~1 KB) for the consumer benches, validated with the shared schema. */
export function benchTicketCreated(tenantId: string): TicketCreatedV1 {
  const ticketId = randomUUID();
  const now = new Date().toISOString();
  return TicketCreatedV1.parse({
    id: randomUUID(),
    type: 'ticket.created.v1',
    occurredAt: now,
    tenantId,
    ticketId,
    idempotencyKey: `bench-${ticketId}`,
    correlationId: `bench-${ticketId.slice(0, 8)}`,
    data: {
      id: ticketId,
      title: 'Benchmark ticket with a realistic title',
      description: 'A description of moderate length, so that the payload is not trivially small. '.repeat(3),
      priority: 'normal',
      status: 'open',
      externalRef: `ext-${ticketId.slice(0, 12)}`,
      requester: { name: 'Bench Requester', email: 'bench@example.com' },
      metadata: { source: 'bench' },
      createdAt: now,
      updatedAt: now,
    },
  });
}
