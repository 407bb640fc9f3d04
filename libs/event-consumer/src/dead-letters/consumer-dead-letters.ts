import { Pool, type PoolClient } from 'pg';
import { KitTables } from '../kit-schema';
import {
  ConsumerDeadLettersRepository,
  type ConsumerDeadRow,
  type CopyRow,
  type CurrentState,
} from './consumer-dead-letters.repository';
import type {
  ConsumerActionRequest,
  ConsumerDeadLetterDetail,
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  FollowedCopy,
  FollowOptions,
  FollowResult,
  KitActionResult,
} from './consumer-dead-letters.types';
import type { MessageRepublisher } from './message-republisher';
import { eventIdOf, stillInvalid, storedBytes } from './raw-message';

/** For the rows of a requeued chain after its first: which dead letter it was held behind. */
const behind = (rows: readonly ConsumerDeadRow[], i: number) =>
  i === 0 ? '' : ` (held behind ${rows[0].id}, an earlier event of its ticket: produced after it)`;

/** Where a requeued dead letter's copy is, from its row in ConsumerDeadLettersRepository.copies. */
const followed = (row: CopyRow): FollowedCopy => ({
  id: row.id,
  groupId: row.groupId,
  eventId: row.eventId,
  ticketId: row.ticketId,
  state: row.handled ? 'handled' : row.deadAgain ? 'dead-again' : 'not-read',
  ...(row.deadAgain && !row.handled
    ? {
        deadLetter: row.deadAgain,
        reason: row.deadAgainReason ?? '',
        cause: row.deadAgainCause ?? 'handler_failed',
        ...(row.deadAgainHeldBy ? { heldBy: row.deadAgainHeldBy } : {}),
      }
    : {}),
});

/** The ticket of a followed copy (group, topic and key), or its own id when its row is not read yet. */
const ticketOf = (rows: ReadonlyMap<string, CopyRow>, id: string) => {
  const r = rows.get(id);
  return r ? `${r.groupId}\u0000${r.topic}\u0000${r.key ?? r.id}` : id;
};

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

  /**
   * One dead letter (also one already requeued or discarded) with its stored message and audit history; null
   * if unknown. A requeued one with what became of its copy; any with the events of its ticket held behind it.
   */
  async show(id: string): Promise<ConsumerDeadLetterDetail | null> {
    const [item] = await this.repo.list({ id, all: true, limit: 1 });
    if (!item) return null;
    const [content, history, copies, held] = await Promise.all([
      this.repo.content(id),
      this.repo.history(id),
      item.state === 'requeued' ? this.repo.copies([id]) : Promise.resolve([]),
      item.cause === 'invalid' ? Promise.resolve(null) : this.repo.heldBehind(id),
    ]);
    const copy = copies[0] ? followed(copies[0]) : undefined;
    const next =
      item.state === 'dead'
        ? id
        : copy?.state === 'dead-again'
          ? copy.deadLetter
          : copy?.state !== 'not-read'
            ? held?.first
            : undefined;
    const dryRun = next
      ? await this.requeueOne(next, { filter: { id: next, limit: 1 }, actor: { by: 'show', note: null }, dryRun: true })
      : [];
    return {
      item,
      content,
      history,
      ...(copy ? { copy } : {}),
      ...(held ? { heldBehind: held } : {}),
      ...(next ? { next: { id: next, dryRun } } : {}),
    };
  }

  /**
   * Produces the selected dead letters again one at a time, each send acknowledged before the next, in
   * the order they had in Kafka (topic, partition, offset; with a limit, the first in that order: see
   * ConsumerDeadLettersRepository.actionable), so a ticket's events reach the handlers in their order.
   * A handler's dead letter takes with it every later dead letter of its ticket in the group that is
   * still dead (those held behind it), in their order and in one transaction, so the copies are not held
   * again; one that waits behind an earlier dead letter still dead is refused, naming it. A send that
   * fails stops the run: nothing later goes ahead of it.
   */
  async requeue(req: ConsumerActionRequest): Promise<KitActionResult[]> {
    const ids = req.filter.id ? [req.filter.id] : await this.repo.actionable(req.filter);
    const results: KitActionResult[] = [];
    for (const id of ids) {
      if (results.some((r) => r.id === id)) continue; // requeued behind an earlier one of this run
      results.push(...(await this.requeueOne(id, req)));
    }
    return results;
  }

  /**
   * Follows the copies of a requeue (the `requeued` ones of `results`) until the group has read each: handled
   * (applied, or skipped as applied before) or dead-lettered again. The events of a ticket the group read
   * between the requeue and its copies were held behind them (not handled: inbox.repository.ts); once every
   * copy of that ticket is handled, they are requeued (the first of them, which takes the rest along, with the
   * same actor) and followed in turn. A ticket with a copy dead again is left as it is: its new dead letter
   * holds the rest, and a requeue of it takes them along. Polls every `pollMs` (default 500) until `timeoutMs`.
   */
  async follow(results: readonly KitActionResult[], o: FollowOptions): Promise<FollowResult> {
    const copies = new Map<string, FollowedCopy>();
    // A held event another operator requeued meanwhile (not-dead) is followed too: its copy is just as
    // unread. One discarded instead has no copy, and drops out at the next look.
    const track = (rs: readonly KitActionResult[]) => {
      for (const r of rs)
        if (r.outcome === 'requeued' || r.outcome === 'not-dead')
          copies.set(r.id, { id: r.id, groupId: '', eventId: null, ticketId: null, state: 'not-read' });
    };
    track(results.filter((r) => r.outcome === 'requeued'));
    const requeued: KitActionResult[] = [];
    const tried = new Set<string>(); // a refused one is not tried again on every look
    const asked = new Set<string>(); // copies whose held events were looked up
    const started = Date.now();
    const deadline = started + o.timeoutMs;
    const pollMs = o.pollMs ?? 500;
    let said = '';
    let saidAt = 0;
    for (;;) {
      const rows = new Map((await this.repo.copies([...copies.keys()])).map((r) => [r.id, r]));
      for (const id of copies.keys()) if (!rows.has(id)) copies.delete(id);
      for (const row of rows.values()) copies.set(row.id, followed(row));
      // A ticket whose copies are all handled: what the group held behind them meanwhile goes after them.
      // Asked once a copy while others are unread: the claim that handles a copy commits no earlier than what
      // it held behind it (it reads the partition in order, and waits on the copy's row). Asked again for all
      // when none is left unread, before returning: a member whose claim began before the copy's event reached
      // the inbox another way (a replay of the original) can still hold one behind it.
      const open = new Set([...copies.values()].filter((c) => c.state !== 'handled').map((c) => ticketOf(rows, c.id)));
      const last = ![...copies.values()].some((c) => c.state === 'not-read');
      const heads = [...copies.values()]
        .filter((c) => (last || !asked.has(c.id)) && !open.has(ticketOf(rows, c.id)))
        .map((c) => c.id);
      for (const id of heads) asked.add(id);
      for (const id of await this.repo.firstHeldBehind(heads)) {
        if (tried.has(id)) continue;
        tried.add(id);
        const out = await this.requeueOne(id, { filter: { id, limit: 1 }, actor: o.actor, dryRun: false });
        requeued.push(...out);
        track(out);
        for (const r of out) o.progress?.(`${r.outcome}: ${r.message}`);
      }
      const all = [...copies.values()];
      const count = (s: FollowedCopy['state']) => all.filter((c) => c.state === s).length;
      const [handled, dead, notRead] = [count('handled'), count('dead-again'), count('not-read')];
      const line = `follow: ${handled} of ${all.length} copies handled by the group, ${dead} dead-lettered again, ${notRead} not read yet`;
      const elapsed = Date.now() - started;
      if (line !== said || elapsed - saidAt >= 10_000) {
        o.progress?.(`${line} (${Math.round(elapsed / 1000)} s)`);
        [said, saidAt] = [line, elapsed];
      }
      const refused = requeued.some((r) => r.outcome === 'refused');
      const settled = notRead === 0; // a requeue just made is counted as not read
      if (settled || Date.now() >= deadline)
        return {
          outcome: !settled ? 'timeout' : dead ? 'dead-again' : refused ? 'refused' : 'handled',
          copies: all,
          requeued,
        };
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /** Discards the selected dead letters; with a limit, the newest, as `list` shows them (their order does not matter). */
  async discard(req: ConsumerActionRequest): Promise<KitActionResult[]> {
    const ids = req.filter.id
      ? [req.filter.id]
      : (await this.repo.list({ ...req.filter, all: false })).map((i) => i.id);
    const results: KitActionResult[] = [];
    for (const id of ids) results.push(await this.discardOne(id, req, new Set(ids)));
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

  private async requeueOne(id: string, req: ConsumerActionRequest): Promise<KitActionResult[]> {
    const r = (outcome: KitActionResult['outcome'], message: string, of = id): KitActionResult => ({
      id: of,
      outcome,
      message,
    });
    // The produce happens with the rows locked and before their resolution commits: a crash in between
    // leaves them dead after all, and a second requeue produces the messages again; the consumer skips
    // the copies by their event ids (at-least-once, processed once). The consumer's claim waits on the
    // locks, so a copy read before the commit is not held behind the rows being requeued.
    const done = await this.transaction(async (tx) => {
      const row = await this.repo.row(tx, id, !req.dryRun);
      if (!row) return null;
      const value = storedBytes(row.value);
      const invalid = stillInvalid(value);
      if (invalid)
        return [
          r(
            'refused',
            `consumer dead letter ${id} still does not parse (${invalid}): the consumer would dead-letter it again; discard it`,
          ),
        ];
      let rows = [row];
      if (row.cause !== 'invalid' && row.key !== null) {
        const { before, after } = await this.repo.chain(tx, row, !req.dryRun);
        if (before)
          return [
            r(
              'refused',
              `consumer dead letter ${id} waits behind ${before.id}, an earlier event of ticket ${row.key} in group ${row.groupId} still dead: requeue ${before.id}, which brings this one back after it, or discard ${before.id} first`,
            ),
          ];
        rows = [row, ...after];
      }
      if (req.dryRun)
        return rows.map((d, i) =>
          r(
            'would-requeue',
            `would produce the stored message (event ${eventIdOf(storedBytes(d.value))}) to ${d.topic} with key ${d.key ?? '(none)'}${behind(rows, i)}`,
            d.id,
          ),
        );
      const out: KitActionResult[] = [];
      for (const [i, d] of rows.entries())
        out.push(r('requeued', `${await this.produce(tx, d, req)}${behind(rows, i)}`, d.id));
      return out;
    });
    return done ?? [await this.notDead(id)];
  }

  /** Produces one stored message again and marks its dead letter requeued, inside the caller's transaction. */
  private async produce(tx: PoolClient, row: ConsumerDeadRow, req: ConsumerActionRequest): Promise<string> {
    if (!this.republisher) throw new Error('requeuing a consumer dead letter needs the Kafka producer (brokers)');
    const value = storedBytes(row.value)!;
    const headers = Object.fromEntries(
      Object.entries(row.headers ?? {}).map(([k, v]) => [k, storedBytes(v) ?? Buffer.alloc(0)]),
    );
    const at = await this.republisher.send({ topic: row.topic, key: storedBytes(row.key), value, headers });
    const detail = {
      topic: row.topic,
      partition: at.partition,
      offset: at.offset,
      from: { groupId: row.groupId, partition: row.partition, offset: row.offset },
    };
    await this.repo.resolve(tx, row, 'requeue', req.actor, eventIdOf(value), detail, at);
    return `produced the stored message (event ${eventIdOf(value)}) to ${row.topic}[${at.partition}]@${at.offset} with key ${row.key ?? '(none)'}; every group reads it, and one that already processed the event skips it`;
  }

  /** `run`: the ids this discard acts on; of the events held behind `id`, those not among them are named. */
  private async discardOne(id: string, req: ConsumerActionRequest, run: Set<string>): Promise<KitActionResult> {
    const r = (outcome: KitActionResult['outcome'], message: string): KitActionResult => ({ id, outcome, message });
    const done = await this.transaction(async (tx) => {
      const row = await this.repo.row(tx, id, !req.dryRun);
      if (!row) return null;
      // What waits behind it stays dead: discarding one event does not decide about the ticket's later ones.
      // Named only when this is the first of its ticket still dead: otherwise they wait behind that one.
      const chain = row.cause === 'invalid' || row.key === null ? null : await this.repo.chain(tx, row, false);
      const after = chain && !chain.before ? chain.after.filter((d) => !run.has(d.id)) : [];
      const held = after.length
        ? `; ${after.length} later event(s) of ticket ${row.key} stay dead: requeue ${after[0].id} to hand them to the handlers in their order`
        : '';
      if (req.dryRun) return r('would-discard', `would mark consumer dead letter ${id} discarded${held}`);
      await this.repo.resolve(tx, row, 'discard', req.actor, null, {});
      return r('discarded', `consumer dead letter ${id} discarded (kept, marked)${held}`);
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
