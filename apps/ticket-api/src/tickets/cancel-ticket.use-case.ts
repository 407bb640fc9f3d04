import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { TICKET_CANCELLED_V1, type CancelTicketInput, type TicketCancelledV1 } from '@tickets/contracts';
import { DomainError } from '@tickets/errors';
import { IdempotentCommandRunner } from '../idempotency/idempotent-command.runner';
import { RelayService } from '../relay/relay.service';
import type { CommandAnswer } from '../idempotency/keyed-command.types';
import { toTicket } from './ticket.mapper';
import { TicketsRepository } from './tickets.repository';
import type { TicketOutcome, WriteResult } from './tickets.results';

export const CANCEL_OPERATION = 'ticket.cancel';

export interface CancelCommand {
  tenantId: string;
  ticketId: string;
  idempotencyKey: string;
  input: CancelTicketInput;
  traceparent: string;
  correlationId: string;
}

/**
 * The compensation for a create. Idempotent twice over: the key gives back the first answer, and a
 * ticket that is already cancelled is returned as it is, with no second `ticket.cancelled.v1` event.
 */
@Injectable()
export class CancelTicketUseCase {
  constructor(
    private readonly tickets: TicketsRepository,
    private readonly idempotent: IdempotentCommandRunner,
    private readonly relay: RelayService,
  ) {}

  async execute(cmd: CancelCommand): Promise<WriteResult> {
    const request = { ticketId: cmd.ticketId, ...cmd.input } as Record<string, unknown>;
    const result = await this.idempotent.run<TicketOutcome>(
      { tenantId: cmd.tenantId, key: cmd.idempotencyKey, operation: CANCEL_OPERATION, request },
      {
        transaction: async (tx, { now }): Promise<CommandAnswer<TicketOutcome>> => {
          const current = await this.tickets.findTicket(cmd.tenantId, cmd.ticketId, tx, true);
          if (!current)
            throw new DomainError('ticket_not_found', `No ticket ${cmd.ticketId} in your tenant.`, {
              ticketId: cmd.ticketId,
            });
          if (current.status === 'cancelled') {
            return {
              outcome: 'already_cancelled',
              status: 200,
              body: JSON.stringify(toTicket(current)),
              ticketId: cmd.ticketId,
            };
          }
          const row = await this.tickets.markCancelled(tx, cmd.tenantId, cmd.ticketId, now);
          const event: TicketCancelledV1 = {
            id: randomUUID(),
            type: TICKET_CANCELLED_V1,
            occurredAt: now.toISOString(),
            tenantId: cmd.tenantId,
            ticketId: cmd.ticketId,
            idempotencyKey: cmd.idempotencyKey,
            correlationId: cmd.correlationId,
            data: toTicket(row),
          };
          const headers = JSON.stringify({ traceparent: cmd.traceparent, 'correlation-id': cmd.correlationId });
          await this.tickets.enqueueEvent(
            tx,
            cmd.tenantId,
            cmd.ticketId,
            { eventId: event.id, eventType: event.type, payload: JSON.stringify(event), headers },
            now,
          );
          return { outcome: 'cancelled', status: 200, body: JSON.stringify(toTicket(row)), ticketId: cmd.ticketId };
        },
      },
    );
    // Committed by now (the transaction has ended): the relay publishes the event without waiting for its poll.
    if (!result.fromStore && result.answer.outcome === 'cancelled') this.relay.eventsCommitted();
    return result;
  }
}
