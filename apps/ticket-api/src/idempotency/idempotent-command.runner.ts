import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { databaseFailure, isUniqueViolation, sqlState } from '@tickets/db';
import { DomainError, WriteOutcomeUnknownError } from '@tickets/errors';
import { IdempotencyKeysRepository, type NewKey } from '@tickets/idempotency';
import { APP_CONFIG } from '../common/tokens';
import { Database, type Tx } from '../infra/database';
import { IdempotencyMetrics } from './idempotency.metrics';
import { fingerprint } from './idempotency-key';
import type { CommandAnswer, KeyedCommand, KeyedResult, StatementAttempt } from './keyed-command.types';
import { ResponseCache } from './response-cache';
import { answerFromStoreOrReject } from './stored-answer';

const MAX_RACE_RETRIES = 4;

/** Given to each attempt: its clock, and the key row that records an answer. */
export interface KeyScope {
  now: Date;
  keyFor(answer: CommandAnswer): NewKey;
}

/**
 * How the command writes. `statement`: in one SQL statement that composes the key guard and key insert
 * of `IdempotencyKeysRepository` (one round trip; the create). `transaction`: `work` runs inside a
 * transaction that already holds the key's lock and found no earlier use; the runner records the key in it.
 */
export type KeyedPlan<O extends string> =
  | { statement: (scope: KeyScope) => Promise<StatementAttempt<O>> }
  | { transaction: (tx: Tx, scope: KeyScope) => Promise<CommandAnswer<O>> };

/**
 * The one entry point of every command sent with an Idempotency-Key: answer from the in-process
 * cache, fingerprint the request, refuse while the key is in flight (409), answer from the key's store
 * or reject a reuse (422) or an expired key (410), run the command, record its key, remember the answer;
 * and count what it came to (tickets_idempotency_outcomes_total).
 */
@Injectable()
export class IdempotentCommandRunner {
  private readonly cache: ResponseCache;

  constructor(
    private readonly keys: IdempotencyKeysRepository,
    private readonly db: Database,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: IdempotencyMetrics,
  ) {
    this.cache = new ResponseCache(config.idempotency.replayCacheSize, config.idempotency.replayCacheChars);
    metrics.watchReplayCache(this.cache);
  }

  run<O extends string>(cmd: KeyedCommand, plan: KeyedPlan<O>): Promise<KeyedResult<O>> {
    return this.decide(cmd, plan).then(
      (result) => {
        this.metrics.answered(result.fromStore, result.answer.outcome);
        return result;
      },
      (error: unknown) => {
        this.metrics.failed(error);
        throw error;
      },
    );
  }

  private async decide<O extends string>(cmd: KeyedCommand, plan: KeyedPlan<O>): Promise<KeyedResult<O>> {
    const print = fingerprint(cmd.operation, cmd.request);
    const cached = this.cache.answer(cmd.tenantId, cmd.key, cmd.operation, print);
    if (cached) return { answer: cached as CommandAnswer<O>, fromStore: true };
    for (let attempt = 0; attempt <= MAX_RACE_RETRIES; attempt++) {
      const now = new Date();
      const scope: KeyScope = { now, keyFor: (answer) => this.keyFor(cmd, print, now, answer) };
      let step: StatementAttempt<O>;
      try {
        step =
          'statement' in plan ? await plan.statement(scope) : await this.inTransaction(cmd, scope, plan.transaction);
      } catch (e) {
        // Lost a race the statement's snapshot could not see (same key, or same externalRef under another
        // key): nothing was written; run it again to find the winner.
        if (isUniqueViolation(e) && attempt < MAX_RACE_RETRIES) continue;
        // The connection died while the write ran: it may or may not have committed. Find out.
        if (databaseFailure(e) === 'outcome_unknown') return this.settle(cmd, print, now, e);
        throw e;
      }
      if (step.kind === 'blocked') {
        const { prior } = step.guard;
        if (!prior) throw this.inUse();
        const answer = answerFromStoreOrReject(prior, cmd.operation, print, cmd.request, now) as CommandAnswer<O>;
        this.remember(cmd, print, answer, prior.replayUntil);
        return { answer, fromStore: true };
      }
      if (step.kind === 'unrecorded') {
        const key = scope.keyFor(step.answer);
        // false: the key was used concurrently; the next round answers from its store.
        if (!(await this.keys.insertKeyIfAbsent(key))) continue;
        this.remember(cmd, print, step.answer, key.replayUntil);
        return { answer: step.answer, fromStore: false };
      }
      if (step.kind === 'recorded') {
        this.remember(cmd, print, step.answer, scope.keyFor(step.answer).replayUntil);
        return { answer: step.answer, fromStore: false };
      }
    }
    throw new Error(`${cmd.operation} made no progress after repeated attempts`);
  }

  private inTransaction<O extends string>(
    cmd: KeyedCommand,
    scope: KeyScope,
    work: (tx: Tx, scope: KeyScope) => Promise<CommandAnswer<O>>,
  ): Promise<StatementAttempt<O>> {
    return this.db.transaction(async (tx) => {
      const gotLock = await this.keys.tryLockKey(tx, cmd.tenantId, cmd.key);
      const prior = gotLock ? await this.keys.findKey(cmd.tenantId, cmd.key, tx) : null;
      if (!gotLock || prior) return { kind: 'blocked', guard: { gotLock, prior } };
      const answer = await work(tx, scope);
      await this.keys.insertKey(tx, scope.keyFor(answer));
      return { kind: 'recorded', answer };
    });
  }

  /**
   * The answer to a write whose connection died mid-statement, decided on a fresh connection within
   * IDEMPOTENCY_SETTLE_TIMEOUT: once no transaction holds the key's lock, the key row says whether the
   * write committed (the key is written in the same transaction as the ticket and its event). Committed:
   * its answer (this request's own, or another request's with the same key). Not committed: 503, nothing
   * was written. Undecided in time: WriteOutcomeUnknownError, which the problem filter answers with a 500.
   */
  private async settle<O extends string>(
    cmd: KeyedCommand,
    print: string,
    now: Date,
    original: unknown,
  ): Promise<KeyedResult<O>> {
    const deadline = Date.now() + this.config.idempotency.settleTimeoutMs;
    for (let delay = 100; ; delay = Math.min(400, delay * 2)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new WriteOutcomeUnknownError(original);
      let prior;
      try {
        prior = await this.keys.findKeyOnceSettled(cmd.tenantId, cmd.key, left);
      } catch (e) {
        // 55P03: the write still holds the key's lock; a database failure: not reachable yet. Either: again.
        if (sqlState(e) !== '55P03' && databaseFailure(e) === undefined) throw new WriteOutcomeUnknownError(original);
        await new Promise((r) =>
          setTimeout(r, Math.min(Math.max(0, deadline - Date.now()), delay / 2 + Math.random() * (delay / 2))),
        );
        continue;
      }
      if (!prior) {
        throw new DomainError(
          'database_unavailable',
          'The database connection was lost while the request ran, and the request did not commit (checked): nothing was written. Retry with the same Idempotency-Key.',
          {},
          1,
        );
      }
      const answer = answerFromStoreOrReject(prior, cmd.operation, print, cmd.request, now) as CommandAnswer<O>;
      this.remember(cmd, print, answer, prior.replayUntil);
      // The key row this request wrote carries its clock; any other is an earlier request's answer.
      return { answer, fromStore: prior.createdAt.getTime() !== now.getTime() };
    }
  }

  /** Called only once the answer's key row is committed. */
  private remember(cmd: KeyedCommand, print: string, answer: CommandAnswer, replayUntil: Date): void {
    this.cache.remember(cmd.tenantId, cmd.key, {
      operation: cmd.operation,
      fingerprint: print,
      answer,
      replayUntil: replayUntil.getTime(),
    });
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

  private keyFor(cmd: KeyedCommand, print: string, now: Date, answer: CommandAnswer): NewKey {
    const { replayWindowMs, keyRetentionMs } = this.config.idempotency;
    return {
      tenantId: cmd.tenantId,
      key: cmd.key,
      operation: cmd.operation,
      fingerprint: print,
      requestBody: cmd.request,
      responseStatus: answer.status,
      responseBody: answer.body,
      outcome: answer.outcome,
      ticketId: answer.ticketId,
      createdAt: now,
      replayUntil: new Date(now.getTime() + replayWindowMs),
      expiresAt: new Date(now.getTime() + keyRetentionMs),
    };
  }
}
