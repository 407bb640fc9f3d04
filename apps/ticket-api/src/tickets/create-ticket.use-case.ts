import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { TICKET_CREATED_V1, type CreateTicketInput, type TicketCreatedV1 } from '@tickets/contracts';
import { IdempotentCommandRunner } from '../idempotency/idempotent-command.runner';
import { RelayService } from '../relay/relay.service';
import type { CommandAnswer, StatementAttempt } from '../idempotency/keyed-command.types';
import { toTicket, type TicketRow } from './ticket.mapper';
import { TicketsRepository } from './tickets.repository';
import type { TicketOutcome, WriteResult } from './tickets.results';

export const CREATE_OPERATION = 'ticket.create';

export interface CreateCommand {
  tenantId: string;
  idempotencyKey: string;
  input: CreateTicketInput;
  traceparent: string;
  correlationId: string;
}

/** A new ticket, in one statement with its key and its `ticket.created.v1` event; or the ticket with the same externalRef. */
@Injectable()
export class CreateTicketUseCase {
  constructor(
    private readonly tickets: TicketsRepository,
    private readonly idempotent: IdempotentCommandRunner,
    private readonly relay: RelayService,
  ) {}

  async execute(cmd: CreateCommand): Promise<WriteResult> {
    const request = cmd.input as unknown as Record<string, unknown>;
    const result = await this.idempotent.run<TicketOutcome>(
      { tenantId: cmd.tenantId, key: cmd.idempotencyKey, operation: CREATE_OPERATION, request },
      {
        statement: async ({ now, keyFor }): Promise<StatementAttempt<TicketOutcome>> => {
          const row: TicketRow & { tenantId: string; idempotencyKey: string } = {
            id: randomUUID(),
            tenantId: cmd.tenantId,
            idempotencyKey: cmd.idempotencyKey,
            title: cmd.input.title,
            description: cmd.input.description ?? null,
            priority: cmd.input.priority,
            status: 'open',
            externalRef: cmd.input.externalRef ?? null,
            requester: cmd.input.requester ?? null,
            metadata: cmd.input.metadata ?? null,
            createdAt: now,
            updatedAt: now,
          };
          const ticket = toTicket(row);
          const answer: CommandAnswer<TicketOutcome> = {
            outcome: 'created',
            status: 201,
            body: JSON.stringify(ticket),
            ticketId: row.id,
          };
          const event: TicketCreatedV1 = {
            id: randomUUID(),
            type: TICKET_CREATED_V1,
            occurredAt: now.toISOString(),
            tenantId: cmd.tenantId,
            ticketId: row.id,
            idempotencyKey: cmd.idempotencyKey,
            correlationId: cmd.correlationId,
            data: ticket,
          };
          const res = await this.tickets.tryCreate({
            row,
            key: keyFor(answer),
            event: {
              eventId: event.id,
              eventType: event.type,
              payload: envelopeJson(event, answer.body),
              headers: JSON.stringify({ traceparent: cmd.traceparent, 'correlation-id': cmd.correlationId }),
            },
          });
          if (res.created) return { kind: 'recorded', answer };
          if (!res.guard.gotLock || res.guard.prior) return { kind: 'blocked', guard: res.guard };
          if (!res.duplicateTicketId) return { kind: 'again' };
          const existing = await this.tickets.findTicket(cmd.tenantId, res.duplicateTicketId);
          if (!existing) return { kind: 'again' }; // deleted meanwhile
          const body = JSON.stringify(toTicket(existing));
          return { kind: 'unrecorded', answer: { outcome: 'deduplicated', status: 200, body, ticketId: existing.id } };
        },
      },
    );
    // Committed by now: the relay publishes the event without waiting for its poll.
    if (!result.fromStore && result.answer.outcome === 'created') this.relay.eventsCommitted();
    return result;
  }
}

/**
 * JSON.stringify(event), reusing the ticket's JSON (the answer's body) for `data`, its last key, instead of
 * serialising the ticket a second time: the same text.
 */
function envelopeJson(event: TicketCreatedV1, ticketJson: string): string {
  const { data: _data, ...head } = event;
  return `${JSON.stringify(head).slice(0, -1)},"data":${ticketJson}}`;
}
