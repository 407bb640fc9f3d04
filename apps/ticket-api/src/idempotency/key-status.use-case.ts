import { Injectable } from '@nestjs/common';
import { DomainError } from '@tickets/errors';
import { IdempotencyKeysRepository } from '@tickets/idempotency';
import { IdempotencyMetrics } from './idempotency.metrics';

export interface KeyStatus {
  key: string;
  state: 'processing' | 'completed' | 'expired';
  ticketId: string | null;
  operation: string | null;
  response?: { status: number; body: unknown };
  createdAt: string | null;
  replayUntil: string | null;
  expiresAt: string | null;
}

/** "What happened to key K?" — the question a caller asks after a timeout, before sending again. */
@Injectable()
export class KeyStatusUseCase {
  constructor(
    private readonly keys: IdempotencyKeysRepository,
    private readonly metrics: IdempotencyMetrics,
  ) {}

  async execute(tenantId: string, key: string): Promise<KeyStatus> {
    const status = await this.lookUp(tenantId, key).catch((e: unknown) => {
      if (e instanceof DomainError && e.code === 'idempotency_key_not_found') this.metrics.statusQuery('not_found');
      throw e;
    });
    this.metrics.statusQuery(status.state);
    return status;
  }

  private async lookUp(tenantId: string, key: string): Promise<KeyStatus> {
    // One statement for a known key and for one in flight; an unknown key costs a second read.
    const { stored: first, inFlight } = await this.keys.findKeyOrInFlight(tenantId, key);
    if (!first && inFlight) {
      return {
        key,
        state: 'processing',
        ticketId: null,
        operation: null,
        createdAt: null,
        replayUntil: null,
        expiresAt: null,
      };
    }
    // Read again: the request may have committed between the two looks.
    const stored = first ?? (await this.keys.findKey(tenantId, key));
    if (stored) {
      const live = stored.responseBody !== null && new Date() < stored.replayUntil;
      return {
        key,
        state: live ? 'completed' : 'expired',
        ticketId: stored.ticketId,
        operation: stored.operation,
        ...(live ? { response: { status: stored.responseStatus, body: JSON.parse(stored.responseBody!) } } : {}),
        createdAt: stored.createdAt.toISOString(),
        replayUntil: stored.replayUntil.toISOString(),
        expiresAt: stored.expiresAt.toISOString(),
      };
    }
    throw new DomainError(
      'idempotency_key_not_found',
      'Nothing is known about this key: never used, already purged, or its request failed and left nothing. Sending the request again with this key is safe.',
      { key },
    );
  }
}
