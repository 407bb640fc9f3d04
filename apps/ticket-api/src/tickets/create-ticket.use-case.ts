import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { TICKET_CREATED_V1, type CreateTicketInput, type TicketCreatedV1 } from '@tickets/contracts';
import type { AppConfig } from '@tickets/config';
import { isUniqueViolation } from '@tickets/db';
import { DomainError } from '@tickets/errors';
import { APP_CONFIG } from '../common/tokens';
import { fingerprint } from '../idempotency/idempotency-key';
import { replayOrReject } from '../idempotency/replay';
import { ReplayCache } from '../idempotency/replay-cache';
import { toTicket, type TicketRow } from './ticket.mapper';
import { TicketsRepository, type NewKey } from './tickets.repository';
import type { WriteResult } from './tickets.results';

export const CREATE_OPERATION = 'ticket.create';
const MAX_RACE_RETRIES = 4;

export interface CreateCommand {
  tenantId: string;
  idempotencyKey: string;
  input: CreateTicketInput;
  traceparent: string;
  correlationId: string;
}

@Injectable()
export class CreateTicketUseCase {
  private readonly cache: ReplayCache;

  constructor(
    private readonly repo: TicketsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.cache = new ReplayCache(config.idempotency.replayCacheSize);
  }

  async execute(cmd: CreateCommand): Promise<WriteResult> {
    const request = cmd.input as unknown as Record<string, unknown>;
    const print = fingerprint(CREATE_OPERATION, request);
    const cached = this.cache.replay(cmd.tenantId, cmd.idempotencyKey, CREATE_OPERATION, print);
    if (cached) return cached;
    const result = await this.run(cmd, request, print);
    if (result.replayUntil !== undefined) {
      // Committed by now (created, deduplicated or replayed from the database): later replays skip the database.
      this.cache.remember(cmd.tenantId, cmd.idempotencyKey, {
        operation: CREATE_OPERATION,
        fingerprint: print,
        status: result.status,
        body: result.body,
        ticketId: result.ticketId,
        deduplicated: result.deduplicated,
        replayUntil: result.replayUntil,
      });
    }
    return result;
  }

  private async run(cmd: CreateCommand, request: Record<string, unknown>, print: string): Promise<WriteResult> {
    for (let attempt = 0; ; attempt++) {
      const now = new Date();
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
      const body = JSON.stringify(ticket);
      const key = this.newKey(cmd, print, request, now, { responseStatus: 201, responseBody: body, outcome: 'created', ticketId: row.id });
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
      let res;
      try {
        res = await this.repo.tryCreate({
          row,
          key,
          event: {
            eventId: event.id,
            eventType: event.type,
            payload: JSON.stringify(event),
            headers: JSON.stringify({ traceparent: cmd.traceparent, 'correlation-id': cmd.correlationId }),
          },
        });
      } catch (e) {
        // Lost a race the statement's snapshot could not see (same key, or same externalRef under another
        // key): nothing was written; run it again to find the winner.
        if (isUniqueViolation(e) && attempt < MAX_RACE_RETRIES) continue;
        throw e;
      }
      if (res.prior) return replayOrReject(res.prior, CREATE_OPERATION, print, request, now);
      if (!res.gotLock) throw this.inUse();
      if (res.created) return { outcome: 'created', status: 201, body, ticketId: row.id, replayed: false, deduplicated: false, replayUntil: key.replayUntil.getTime() };
      if (res.duplicateTicketId) {
        const existing = await this.repo.findTicket(cmd.tenantId, res.duplicateTicketId);
        if (!existing) continue; // deleted meanwhile; try again
        const dupBody = JSON.stringify(toTicket(existing));
        const dupKey = this.newKey(cmd, print, request, now, { responseStatus: 200, responseBody: dupBody, outcome: 'deduplicated', ticketId: existing.id });
        if (!(await this.repo.insertKey(dupKey))) continue; // the key was used concurrently: the next round replays it
        return { outcome: 'deduplicated', status: 200, body: dupBody, ticketId: existing.id, replayed: false, deduplicated: true, replayUntil: dupKey.replayUntil.getTime() };
      }
      if (attempt >= MAX_RACE_RETRIES) throw new Error('create made no progress after repeated attempts');
    }
  }

  private inUse(): DomainError {
    const s = this.config.idempotency.inUseRetryAfterSeconds;
    return new DomainError(
      'idempotency_key_in_use',
      `A request with this Idempotency-Key is in progress. Retry the same request with the same key after ${s}s, or ask GET /v1/idempotency-keys/{key}.`,
      {},
      s,
    );
  }

  private newKey(
    cmd: CreateCommand,
    print: string,
    request: Record<string, unknown>,
    now: Date,
    r: Pick<NewKey, 'responseStatus' | 'responseBody' | 'outcome' | 'ticketId'>,
  ): NewKey {
    const { replayWindowMs, keyRetentionMs } = this.config.idempotency;
    return {
      tenantId: cmd.tenantId,
      key: cmd.idempotencyKey,
      operation: CREATE_OPERATION,
      fingerprint: print,
      requestBody: request,
      createdAt: now,
      replayUntil: new Date(now.getTime() + replayWindowMs),
      expiresAt: new Date(now.getTime() + keyRetentionMs),
      ...r,
    };
  }
}
