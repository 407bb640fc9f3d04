import { Prisma, type PrismaClient } from '@tickets/db';
import { OUTBOX_NOTIFY_CHANNEL } from '@tickets/outbox';
import type { Actor } from './dead-letter.types';
import type { OutboxDeadRow } from './outbox-requeue-plan';

type Tx = Prisma.TransactionClient;

export interface NotificationChange {
  id: string;
  attempts: number;
  targetUrl: string | null;
}

/** Where a thing that is no longer dead is now, to say so. */
export interface CurrentState {
  state: string;
  lastAction?: { action: string; actor: string; at: Date };
}

const OUTBOX_ROW = Prisma.sql`d.seq::text AS seq, d.event_id::text AS "eventId", d.aggregate_id::text AS "aggregateId",
  d.event_type AS "eventType", d.payload::text AS payload, d.headers, d.reason, d.attempts`;

const audit = (a: Actor) => Prisma.sql`${a.by}, ${a.note}`;

/**
 * The writes behind `dead-letters requeue|discard`: each method is one transaction that changes the
 * dead letter and writes its dead_letter_actions row together, so an action is never half done or
 * unaudited. Writes outbox_dead_letters, outbox_events, notifications (status) and dead_letter_actions
 * (consumer dead letters are the kit's: ConsumerDeadLetters of @tickets/event-consumer).
 */
export class DeadLetterActionsRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Own transaction (interactive: the caller's work runs between the reads and the writes). */
  transaction<T>(work: (tx: Tx) => Promise<T>, timeoutMs = 15_000): Promise<T> {
    return this.prisma.$transaction(work, { maxWait: 5_000, timeout: timeoutMs });
  }

  /**
   * Every dead letter of the ticket of outbox event `eventId`, in seq order. Inside the caller's
   * transaction; with `lock`, FOR UPDATE, so a concurrent requeue of the same ticket waits and then
   * finds the rows gone. The lock on `eventId` comes first, in a statement of its own: a relay that is
   * dead-lettering a row behind it holds it FOR KEY SHARE (OutboxRepository.deadLetter), so this
   * waits for that statement, and the read that follows (a new snapshot) sees the row it added.
   */
  async outboxTicketRows(tx: Tx, eventId: string, lock: boolean): Promise<OutboxDeadRow[]> {
    if (lock)
      await tx.$queryRaw(Prisma.sql`SELECT 1 FROM outbox_dead_letters WHERE event_id = ${eventId}::uuid FOR UPDATE`);
    return tx.$queryRaw<OutboxDeadRow[]>(Prisma.sql`
      SELECT ${OUTBOX_ROW} FROM outbox_dead_letters d
       WHERE d.aggregate_id = (SELECT aggregate_id FROM outbox_dead_letters WHERE event_id = ${eventId}::uuid)
       ORDER BY d.seq ${lock ? Prisma.sql`FOR UPDATE` : Prisma.empty}`);
  }

  /**
   * Moves the dead letters with these seqs back into outbox_events with their ORIGINAL seq and
   * event id (attempts 0, created_at the original one), and audits each, in one statement inside the
   * caller's transaction. The original seq keeps the relay's per-ticket order: it claims in seq order,
   * so the rows follow the ticket's earlier events and precede any later one still unpublished.
   */
  async moveOutboxBack(tx: Tx, seqs: string[], actor: Actor): Promise<string[]> {
    const rows = await tx.$queryRaw<Array<{ eventId: string }>>(Prisma.sql`
      WITH moved AS (
        DELETE FROM outbox_dead_letters WHERE seq = ANY(${seqs}::bigint[]) RETURNING *
      ), back AS (
        INSERT INTO outbox_events (seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at)
        SELECT seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, outbox_created_at
          FROM moved ORDER BY seq
        RETURNING seq, event_id
      ), audited AS (
        INSERT INTO dead_letter_actions (kind, action, target_id, tenant_id, ticket_id, event_id, dead_reason, actor, note, detail, snapshot)
        SELECT 'outbox', 'requeue', m.event_id::text, m.tenant_id, m.aggregate_id, m.event_id, m.reason, ${audit(actor)},
               jsonb_build_object('requeuedTogether', (SELECT jsonb_agg(event_id ORDER BY seq) FROM moved), 'seq', m.seq),
               to_jsonb(m)
          FROM moved m
        RETURNING 1
      )
      SELECT event_id::text AS "eventId" FROM back ORDER BY seq`);
    return rows.map((r) => r.eventId);
  }

  /** Runs alone, after the commit of requeued rows: wakes the leading relay (in whichever process) now rather than at its next poll. */
  async wakeRelay(): Promise<void> {
    await this.prisma.$executeRaw(Prisma.sql`SELECT pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`);
  }

  /** Deletes one outbox dead letter, keeping it whole in its audit row's snapshot (one statement, own transaction). */
  async discardOutbox(eventId: string, actor: Actor): Promise<{ aggregateId: string; blocked: string[] } | null> {
    const rows = await this.prisma.$queryRaw<Array<{ aggregateId: string }>>(Prisma.sql`
      WITH gone AS (
        DELETE FROM outbox_dead_letters WHERE event_id = ${eventId}::uuid RETURNING *
      ), audited AS (
        INSERT INTO dead_letter_actions (kind, action, target_id, tenant_id, ticket_id, event_id, dead_reason, actor, note, snapshot)
        SELECT 'outbox', 'discard', g.event_id::text, g.tenant_id, g.aggregate_id, g.event_id, g.reason, ${audit(actor)}, to_jsonb(g)
          FROM gone g
        RETURNING 1
      )
      SELECT aggregate_id::text AS "aggregateId" FROM gone`);
    if (!rows[0]) return null;
    const blocked = await this.prisma.$queryRaw<Array<{ eventId: string }>>(Prisma.sql`
      SELECT event_id::text AS "eventId" FROM outbox_dead_letters
       WHERE aggregate_id = ${rows[0].aggregateId}::uuid AND reason = ${`blocked_by_dead_letter:${eventId}`} ORDER BY seq`);
    return { aggregateId: rows[0].aggregateId, blocked: blocked.map((b) => b.eventId) };
  }

  /** Where an outbox event is when it is not (or no longer) dead-lettered. Reads only. */
  async outboxState(eventId: string): Promise<CurrentState> {
    const rows = await this.prisma.$queryRaw<Array<{ state: string }>>(Prisma.sql`
      SELECT CASE WHEN EXISTS (SELECT 1 FROM outbox_pending q WHERE q.seq = o.seq) THEN 'in the outbox, not yet published'
                  ELSE 'published at ' || coalesce((
                         SELECT p.published_at::text FROM outbox_publications p
                          WHERE int8range(p.first_seq, p.last_seq, '[]') @> o.seq AND o.seq = ANY (p.seqs)
                          ORDER BY p.id LIMIT 1), 'an unrecorded time') END AS state
        FROM outbox_events o WHERE o.event_id = ${eventId}::uuid`);
    return {
      state: rows[0]?.state ?? 'not in the outbox (published and purged, or unknown)',
      lastAction: await this.lastAction('outbox', eventId),
    };
  }

  /**
   * A dead notification back to pending, due now, attempts kept, pointed at its tenant's current
   * target (the tenant's webhook_url, else `defaultUrl`), or at `overrideUrl` for this one
   * notification (target_source 'override'); one statement, audited, own transaction.
   */
  async requeueNotification(
    id: string,
    actor: Actor,
    target: { overrideUrl?: string; defaultUrl: string | null },
  ): Promise<NotificationChange | null> {
    return this.changeNotification(id, 'pending', 'requeue', actor, target);
  }

  /** A dead notification marked discarded: kept, never sent (one statement, audited, own transaction). */
  async discardNotification(id: string, actor: Actor): Promise<NotificationChange | null> {
    return this.changeNotification(id, 'discarded', 'discard', actor);
  }

  private async changeNotification(
    id: string,
    status: string,
    action: string,
    actor: Actor,
    target?: { overrideUrl?: string; defaultUrl: string | null },
  ): Promise<NotificationChange | null> {
    const override = target?.overrideUrl ?? null;
    // WHERE status = 'dead' is re-checked on the locked row: of two concurrent requeues one matches.
    const rows = await this.prisma.$queryRaw<NotificationChange[]>(Prisma.sql`
      WITH old AS (
        SELECT n.id, n.target_url AS before, t.webhook_url FROM notifications n LEFT JOIN tenants t ON t.id = n.tenant_id
         WHERE n.id = ${id}::uuid
      ), changed AS (
        UPDATE notifications n SET status = ${status}::text,
               next_attempt_at = CASE WHEN ${status}::text = 'pending' THEN now() END, lease_token = NULL,
               target_url = CASE WHEN NOT ${Boolean(target)}::boolean THEN n.target_url
                                 ELSE COALESCE(${override}::text, old.webhook_url, ${target?.defaultUrl ?? null}::text, n.target_url) END,
               target_source = CASE WHEN NOT ${Boolean(target)}::boolean THEN n.target_source
                                    WHEN ${override}::text IS NOT NULL THEN 'override'
                                    WHEN old.webhook_url IS NOT NULL THEN 'tenant' ELSE 'default' END
          FROM old
         WHERE n.id = old.id AND n.status = 'dead'
        RETURNING n.id, n.tenant_id, n.ticket_id, n.event_id, n.group_id, n.last_error, n.attempts, n.target_url, old.before
      ), audited AS (
        INSERT INTO dead_letter_actions (kind, action, target_id, tenant_id, ticket_id, event_id, dead_reason, actor, note, detail)
        SELECT 'notification', ${action}, c.id::text, c.tenant_id, c.ticket_id, c.event_id, COALESCE(c.last_error, ''), ${audit(actor)},
               jsonb_build_object('group', c.group_id, 'attempts', c.attempts, 'targetUrl', c.target_url)
                 || CASE WHEN c.before IS DISTINCT FROM c.target_url THEN jsonb_build_object('previousTargetUrl', c.before) ELSE '{}' END
                 || CASE WHEN ${override}::text IS NOT NULL THEN jsonb_build_object('overrideUrl', ${override}::text) ELSE '{}' END
          FROM changed c
        RETURNING 1
      )
      SELECT id::text AS id, attempts, target_url AS "targetUrl" FROM changed`);
    return rows[0] ?? null;
  }

  /** A notification's status and last action (reads only). */
  async notificationState(id: string): Promise<CurrentState | null> {
    const rows = await this.prisma.$queryRaw<Array<{ status: string; attempts: number }>>(Prisma.sql`
      SELECT status, attempts FROM notifications WHERE id = ${id}::uuid`);
    if (!rows[0]) return null;
    return {
      state: `${rows[0].status} after ${rows[0].attempts} attempt(s)`,
      lastAction: await this.lastAction('notification', id),
    };
  }

  /** A notification as a dry run sees it, with the target a requeue would send it to now (reads only). */
  async notification(
    id: string,
    defaultUrl: string | null,
  ): Promise<{ status: string; attempts: number; targetUrl: string | null; currentUrl: string | null } | null> {
    const rows = await this.prisma.$queryRaw<
      Array<{ status: string; attempts: number; targetUrl: string | null; currentUrl: string | null }>
    >(Prisma.sql`
      SELECT n.status, n.attempts, n.target_url AS "targetUrl",
             COALESCE(t.webhook_url, ${defaultUrl}::text, n.target_url) AS "currentUrl"
        FROM notifications n LEFT JOIN tenants t ON t.id = n.tenant_id WHERE n.id = ${id}::uuid`);
    return rows[0] ?? null;
  }

  private async lastAction(kind: string, id: string): Promise<CurrentState['lastAction']> {
    const rows = await this.prisma.$queryRaw<Array<{ action: string; actor: string; at: Date }>>(Prisma.sql`
      SELECT action, actor, created_at AS at FROM dead_letter_actions WHERE kind = ${kind} AND target_id = ${id}
       ORDER BY created_at DESC LIMIT 1`);
    return rows[0];
  }
}
