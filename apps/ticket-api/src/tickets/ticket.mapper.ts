import type { Ticket } from '@tickets/contracts';

export interface TicketRow {
  id: string;
  title: string;
  description: string | null;
  priority: string;
  status: string;
  externalRef: string | null;
  requester: unknown;
  metadata: unknown;
  createdAt: Date;
  updatedAt: Date;
}

/** The API/event representation of a ticket row. Field order is fixed, so bodies are stable. */
export function toTicket(row: TicketRow): Ticket {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    priority: row.priority as Ticket['priority'],
    status: row.status as Ticket['status'],
    externalRef: row.externalRef,
    requester: (row.requester ?? null) as Ticket['requester'],
    metadata: (row.metadata ?? null) as Ticket['metadata'],
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
