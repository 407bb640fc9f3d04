import { Pool, type PoolClient } from 'pg';
import { KitTables } from '../kit-schema';
import { ConsumerDeadLettersRepository, type CurrentState } from './consumer-dead-letters.repository';
import type {
  ConsumerActionRequest,
  ConsumerDeadLetterDetail,
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  KitActionResult,
} from './consumer-dead-letters.types';
import type { MessageRepublisher } from './message-republisher';
import { eventIdOf, stillInvalid, storedBytes } from './raw-message';

const since = (s: CurrentState) =>
  s.lastAction ? ` (last ${s.lastAction.action} by ${s.lastAction.actor} at ${s.lastAction.at.toISOString()})` : '';

export interface ConsumerDeadLettersOptions {
  /** The consumer's database; or `pool`, one of the caller's. */
  databaseUrl?: string;
  pool?: Pool;
  /** Default ticket_events. */
  schema?: string;
  /** Needed only to requeue (the stored message goes back to its topic). */
  republisher?: MessageRepublisher;
}

/**
 * List, show, requeue and discard the messages a consumer group dead-lettered (consumer_dead_letters
 * of the kit's schema): the code of `ticket-events dead-letters` and of the ticket service's
 * `dead-letters --kind consumer`. Every requeue or discard is one transaction that changes the dead
 * letter and writes its audit row together; a dry run reads only. Both act only on what is still
 * dead, so running either twice does the work once and then says so.
 */
export class ConsumerDeadLetters {
  private readonly repo: ConsumerDeadLettersRepository;
  private readonly pool: Pool;
  private readonly ownPool: boolean;
  private readonly republisher?: MessageRepublisher;

  constructor(o: ConsumerDeadLettersOptions) {
    if (!o.pool && !o.databaseUrl) throw new Error('ConsumerDeadLetters needs a databaseUrl or a pool');
    this.ownPool = !o.pool;
    this.pool =
      o.pool ?? new Pool({ connectionString: o.databaseUrl, max: 2, application_name: 'ticket-events-dead-letters' });
    if (this.ownPool) this.pool.on('error', () => undefined);
    this.repo = new ConsumerDeadLettersRepository(this.pool, new KitTables(o.schema));
    this.republisher = o.republisher;
  }

  /** Ends the pool it opened (not a pool it was given). */
  async close(): Promise<void> {
    if (this.ownPool) await this.pool.end();
  }

  /** Newest first. */
  list(f: ConsumerDeadLetterFilter): Promise<ConsumerDeadLetterItem[]> {
    return this.repo.list(f);
  }

  /** One dead letter (also one already requeued or discarded) with its stored message and audit history; null if unknown. */
  async show(id: string): Promise<ConsumerDeadLetterDetail | null> {
    const [item] = await this.repo.list({ id, all: true, limit: 1 });
    if (!item) return null;
    const [content, history] = await Promise.all([this.repo.content(id), this.repo.history(id)]);
    return { item, content, history };
  }

  /**
   * Produces the selected dead letters again one at a time, each send acknowledged before the next, in
   * the order they had in Kafka (topic, partition, offset; with a limit, the first in that order: see
   * ConsumerDeadLettersRepository.actionable), so a ticket's events reach the handlers in their order.
   * A send that fails stops the run: nothing later goes ahead of it.
   */
  async requeue(req: ConsumerActionRequest): Promise<KitActionResult[]> {
    const ids = req.filter.id ? [req.filter.id] : await this.repo.actionable(req.filter);
    return this.each(ids, (id) => this.requeueOne(id, req));
  }

  /** Discards the selected dead letters; with a limit, the newest, as `list` shows them (their order does not matter). */
  async discard(req: ConsumerActionRequest): Promise<KitActionResult[]> {
    const ids = req.filter.id
      ? [req.filter.id]
      : (await this.repo.list({ ...req.filter, all: false })).map((i) => i.id);
    return this.each(ids, (id) => this.discardOne(id, req));
  }

  private async each(ids: string[], act: (id: string) => Promise<KitActionResult>): Promise<KitActionResult[]> {
    const results: KitActionResult[] = [];
    for (const id of ids) results.push(await act(id));
    return results;
  }

  private async transaction<T>(work: (tx: PoolClient) => Promise<T>): Promise<T> {
    const tx = await this.pool.connect();
    try {
      await tx.query('BEGIN');
      const out = await work(tx);
      await tx.query('COMMIT');
      return out;
    } catch (err) {
      await tx.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      tx.release();
    }
  }

  private async requeueOne(id: string, req: ConsumerActionRequest): Promise<KitActionResult> {
    const r = (outcome: KitActionResult['outcome'], message: string): KitActionResult => ({ id, outcome, message });
    // The produce happens with the row locked and before the resolution commits: a crash in between
    // leaves it dead after all, and a second requeue produces the message again; the consumer skips
    // the copy by its event id (at-least-once, processed once).
    const done = await this.transaction(async (tx) => {
      const row = await this.repo.row(tx, id, !req.dryRun);
      if (!row) return null;
      const value = storedBytes(row.value);
      const invalid = stillInvalid(value);
      if (invalid)
        return r(
          'refused',
          `consumer dead letter ${id} still does not parse (${invalid}): the consumer would dead-letter it again; discard it`,
        );
      const where = `${row.topic} with key ${row.key ?? '(none)'}`;
      if (req.dryRun)
        return r('would-requeue', `would produce the stored message (event ${eventIdOf(value)}) to ${where}`);
      if (!this.republisher) throw new Error('requeuing a consumer dead letter needs the Kafka producer (brokers)');
      const headers = Object.fromEntries(
        Object.entries(row.headers ?? {}).map(([k, v]) => [k, storedBytes(v) ?? Buffer.alloc(0)]),
      );
      const at = await this.republisher.send({ topic: row.topic, key: storedBytes(row.key), value: value!, headers });
      const detail = {
        topic: row.topic,
        partition: at.partition,
        offset: at.offset,
        from: { groupId: row.groupId, partition: row.partition, offset: row.offset },
      };
      await this.repo.resolve(tx, row, 'requeue', req.actor, eventIdOf(value), detail);
      return r(
        'requeued',
        `produced the stored message (event ${eventIdOf(value)}) to ${row.topic}[${at.partition}]@${at.offset} with key ${row.key ?? '(none)'}; every group reads it, and one that already processed the event skips it`,
      );
    });
    return done ?? this.notDead(id);
  }

  private async discardOne(id: string, req: ConsumerActionRequest): Promise<KitActionResult> {
    const r = (outcome: KitActionResult['outcome'], message: string): KitActionResult => ({ id, outcome, message });
    const done = await this.transaction(async (tx) => {
      const row = await this.repo.row(tx, id, !req.dryRun);
      if (!row) return null;
      if (req.dryRun) return r('would-discard', `would mark consumer dead letter ${id} discarded`);
      await this.repo.resolve(tx, row, 'discard', req.actor, null, {});
      return r('discarded', `consumer dead letter ${id} discarded (kept, marked)`);
    });
    return done ?? this.notDead(id);
  }

  private async notDead(id: string): Promise<KitActionResult> {
    const state = await this.repo.state(id);
    return {
      id,
      outcome: 'not-dead',
      message: state
        ? `consumer dead letter ${id} is ${state.state}${since(state)}; nothing done`
        : `no consumer dead letter ${id}`,
    };
  }
}
