import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { TICKET_CANCELLED_V1, type CancelTicketInput, type TicketCancelledV1 } from '@tickets/contracts';
import type { AppConfig } from '@tickets/config';
import { DomainError } from '@tickets/errors';
import { APP_CONFIG } from '../common/tokens';
import { fingerprint } from '../idempotency/idempotency-key';
import { replayOrReject } from '../idempotency/replay';
import { toTicket } from './ticket.mapper';
import { TicketsRepository } from './tickets.repository';
import type { WriteResult } from './tickets.results';

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
 * The compensation for a create. Idempotent twice over: the key replays the first answer, and a
 * ticket that is already cancelled is returned as it is, with no second `ticket.cancelled.v1` event.
 */
@Injectable()
export class CancelTicketUseCase {
  constructor(
    private readonly repo: TicketsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async execute(cmd: CancelCommand): Promise<WriteResult> {
    const request = { ticketId: cmd.ticketId, ...cmd.input } as Record<string, unknown>;
    const print = fingerprint(CANCEL_OPERATION, request);
    return this.repo.transaction(async (tx) => {
      const now = new Date();
      if (!(await this.repo.tryLockKey(tx, cmd.tenantId, cmd.idempotencyKey))) {
        const s = this.config.idempotency.inUseRetryAfterSeconds;
        throw new DomainError('idempotency_key_in_use', `A request with this Idempotency-Key is in progress; retry after ${s}s with the same key.`, {}, s);
      }
      const prior = await this.repo.findKey(cmd.tenantId, cmd.idempotencyKey, tx);
      if (prior) return replayOrReject(prior, CANCEL_OPERATION, print, request, now);

      const current = await this.repo.findTicket(cmd.tenantId, cmd.ticketId, tx, true);
      if (!current) throw new DomainError('ticket_not_found', `No ticket ${cmd.ticketId} in your tenant.`, { ticketId: cmd.ticketId });

      let outcome: WriteResult['outcome'] = 'already_cancelled';
      let row = current;
      if (current.status !== 'cancelled') {
        outcome = 'cancelled';
        row = await this.repo.markCancelled(tx, cmd.tenantId, cmd.ticketId, now);
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
        await this.repo.enqueueEvent(
          tx,
          cmd.tenantId,
          cmd.ticketId,
          {
            eventId: event.id,
            eventType: event.type,
            payload: JSON.stringify(event),
            headers: JSON.stringify({ traceparent: cmd.traceparent, 'correlation-id': cmd.correlationId }),
          },
          now,
        );
      }
      const body = JSON.stringify(toTicket(row));
      const { replayWindowMs, keyRetentionMs } = this.config.idempotency;
      await this.repo.insertKeyTx(tx, {
        tenantId: cmd.tenantId,
        key: cmd.idempotencyKey,
        operation: CANCEL_OPERATION,
        fingerprint: print,
        requestBody: request,
        responseStatus: 200,
        responseBody: body,
        outcome,
        ticketId: cmd.ticketId,
        createdAt: now,
        replayUntil: new Date(now.getTime() + replayWindowMs),
        expiresAt: new Date(now.getTime() + keyRetentionMs),
      });
      return { outcome, status: 200, body, ticketId: cmd.ticketId, replayed: false, deduplicated: false };
    });
  }
}
