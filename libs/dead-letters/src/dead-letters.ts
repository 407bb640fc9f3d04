import type { PrismaClient } from '@tickets/db';
import type {
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  ConsumerDeadLetters,
  KitActionResult,
} from '@tickets/event-consumer/admin';
import { DeadLetterActionsRepository, type CurrentState } from './dead-letter-actions.repository';
import {
  DEAD_LETTER_KINDS,
  type ActionResult,
  type Actor,
  type DeadLetterDetail,
  type DeadLetterFilter,
  type DeadLetterItem,
  type DeadLetterKind,
} from './dead-letter.types';
import { DeadLettersRepository } from './dead-letters.repository';
import { planOutboxRequeue, type OutboxRequeuePlan } from './outbox-requeue-plan';

export interface ActionRequest {
  kind: DeadLetterKind;
  /** `id` for one dead letter; otherwise every dead one matching the filter (up to its limit). */
  filter: DeadLetterFilter;
  actor: Actor;
  /** Report what would happen; change nothing, audit nothing. */
  dryRun: boolean;
  /** Notification requeue only: send to this URL once instead of the tenant's current target (audited). */
  url?: string;
}

export interface DeadLettersOptions {
  /** NOTIFY_WEBHOOK_URL of this process: where a requeued notification goes when its tenant has no webhook_url. */
  defaultWebhookUrl?: string;
}

/** A text field that holds JSON (an event, a stored message) shown as that JSON; other text as it is. */
function asJson(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

const since = (s: CurrentState) =>
  s.lastAction ? ` (last ${s.lastAction.action} by ${s.lastAction.actor} at ${s.lastAction.at.toISOString()})` : '';

/**
 * List, show, requeue and discard the three kinds of dead letters (the code path of
 * `npm run cli -- dead-letters`). The consumer kind is the kit's own code (ConsumerDeadLetters of
 * @tickets/event-consumer, the same as `ticket-events dead-letters`), with the tenant added here. Every requeue or discard is its own transaction that changes the
 * dead letter and writes its audit row together; a dry run reads only. Requeue and discard act only
 * on what is still dead, so running either twice does the work once and then says so.
 */
export class DeadLetters {
  private readonly reads: DeadLettersRepository;
  private readonly writes: DeadLetterActionsRepository;

  /** `consumer`: the kit's dead letters in the kit's schema (its republisher requeues them to their topic). */
  constructor(
    prisma: PrismaClient,
    private readonly consumer: ConsumerDeadLetters,
    private readonly options: DeadLettersOptions = {},
  ) {
    this.reads = new DeadLettersRepository(prisma);
    this.writes = new DeadLetterActionsRepository(prisma);
  }

  /** Newest first, across the kinds asked for (one read per kind). */
  async list(f: DeadLetterFilter): Promise<DeadLetterItem[]> {
    const kinds = f.kind ? [f.kind] : DEAD_LETTER_KINDS;
    const items = (
      await Promise.all(kinds.map((k) => (k === 'consumer' ? this.listConsumer(f) : this.reads.list(k, f))))
    ).flat();
    return items.sort((a, b) => b.deadAt.getTime() - a.deadAt.getTime()).slice(0, f.limit);
  }

  /** One dead letter (also one already requeued or discarded) with its content and audit history; null if unknown. */
  async show(id: string, kind?: DeadLetterKind): Promise<DeadLetterDetail | null> {
    const [item] = await this.list({ kind, id, all: true, limit: 1 });
    if (!item) return null;
    if (item.kind === 'consumer') {
      const detail = await this.consumer.show(id);
      if (!detail) return null;
      // What the kit's show adds beyond the row (copy, heldBehind, next), each only where it has one.
      const { item: kitItem, content, history, ...fate } = detail;
      return { item, content: jsonFields(content), history, consumer: { groupId: kitItem.groupId, ...fate } };
    }
    const [content, history, attempts] = await Promise.all([
      this.reads.content(item.kind, id),
      this.reads.history(item.kind, id),
      item.kind === 'notification' ? this.reads.attempts(id) : Promise.resolve(undefined),
    ]);
    return { item, content: jsonFields(content), history, ...(attempts ? { attempts } : {}) };
  }

  async requeue(req: ActionRequest): Promise<ActionResult[]> {
    if (req.url !== undefined && req.kind !== 'notification')
      throw new Error(`a requeue to another URL is for notifications only, not ${req.kind} dead letters`);
    if (req.kind === 'consumer') return this.consumerAction('requeue', req);
    const ids = await this.targets(req);
    if (req.kind !== 'outbox') return this.each(ids, (id) => this.requeueNotification(id, req));
    // A later dead letter of a ticket is held back until the earlier one has moved: a second pass
    // picks up those whose earlier dead letter was in this same selection.
    const first = await this.each(ids, (id) => this.requeueOutbox(id, req));
    const retry = first.filter((r) => r.outcome === 'refused' && r.message.includes('held back'));
    if (!retry.length || req.dryRun) return first;
    const second = new Map(
      (
        await this.each(
          retry.map((r) => r.id),
          (id) => this.requeueOutbox(id, req),
        )
      ).map((r) => [r.id, r]),
    );
    return first.map((r) => second.get(r.id) ?? r);
  }

  async discard(req: ActionRequest): Promise<ActionResult[]> {
    if (req.kind === 'consumer') return this.consumerAction('discard', req);
    const ids = await this.targets(req);
    return this.each(ids, (id) =>
      req.kind === 'outbox' ? this.discardOutbox(id, req) : this.discardNotification(id, req),
    );
  }

  private async targets(req: ActionRequest): Promise<string[]> {
    if (req.filter.id) return [req.filter.id];
    return (await this.list({ ...req.filter, kind: req.kind, all: false })).map((i) => i.id);
  }

  private async each(ids: string[], act: (id: string) => Promise<ActionResult>): Promise<ActionResult[]> {
    const results: ActionResult[] = [];
    for (const id of ids) results.push(await act(id));
    return results;
  }

  private async requeueOutbox(id: string, req: ActionRequest): Promise<ActionResult> {
    const r = (outcome: ActionResult['outcome'], message: string, eventIds?: string[]): ActionResult => ({
      kind: 'outbox',
      id,
      outcome,
      message,
      eventIds,
    });
    const { plan, moved } = await this.writes.transaction(async (tx) => {
      const plan: OutboxRequeuePlan = planOutboxRequeue(await this.writes.outboxTicketRows(tx, id, !req.dryRun), id);
      const moved =
        plan.kind === 'requeue' && !req.dryRun
          ? await this.writes.moveOutboxBack(
              tx,
              plan.rows.map((row) => row.seq),
              req.actor,
            )
          : [];
      return { plan, moved };
    });
    if (moved.length) await this.writes.wakeRelay().catch(() => undefined); // a lost wake-up costs one poll interval, nothing else
    if (plan.kind === 'not-dead') {
      const state = await this.writes.outboxState(id);
      return r('not-dead', `outbox event ${id} is not dead-lettered: ${state.state}${since(state)}; nothing done`);
    }
    if (plan.kind === 'held-back') {
      return r(
        'refused',
        `outbox event ${id} is held back by ${plan.by.eventId} (${plan.by.reason}), an earlier dead letter of ticket ${plan.by.aggregateId}: requeue that one first (the events dead-lettered behind it come with it), or discard it`,
      );
    }
    if (plan.kind === 'invalid') {
      const why = plan.rows.map((x) => `${x.row.eventId}: ${x.reason}`).join('; ');
      return r(
        'refused',
        `outbox event ${id} would be dead-lettered again at once (${why}); the envelope cannot be fixed from here: discard it`,
      );
    }
    const ids = plan.rows.map((row) => row.eventId);
    const ticket = plan.rows[0].aggregateId;
    if (req.dryRun)
      return r(
        'would-requeue',
        `would move ${ids.length} event(s) of ticket ${ticket} back to the outbox, in this order: ${ids.join(', ')}`,
        ids,
      );
    return r(
      'requeued',
      `moved ${moved.length} event(s) of ticket ${ticket} back to the outbox with their original seq, in this order: ${moved.join(', ')}; the relay publishes them after the ticket's earlier events`,
      moved,
    );
  }

  private async discardOutbox(id: string, req: ActionRequest): Promise<ActionResult> {
    const r = (outcome: ActionResult['outcome'], message: string): ActionResult => ({
      kind: 'outbox',
      id,
      outcome,
      message,
    });
    if (req.dryRun) {
      const [item] = await this.reads.list('outbox', { id, limit: 1 });
      return item
        ? r('would-discard', `would discard outbox event ${id} of ticket ${item.ticketId} (kept in the audit row)`)
        : r('not-dead', `outbox event ${id} is not dead-lettered; nothing to discard`);
    }
    const gone = await this.writes.discardOutbox(id, req.actor);
    if (!gone) {
      const state = await this.writes.outboxState(id);
      return r('not-dead', `outbox event ${id} is not dead-lettered: ${state.state}${since(state)}; nothing done`);
    }
    const behind = gone.blocked.length
      ? `; ${gone.blocked.length} later event(s) of ticket ${gone.aggregateId} stay dead-lettered behind it: requeue them with --id ${gone.blocked[0]}, or discard them`
      : '';
    return r(
      'discarded',
      `discarded outbox event ${id} of ticket ${gone.aggregateId} (kept in dead_letter_actions.snapshot)${behind}`,
    );
  }

  private async requeueNotification(id: string, req: ActionRequest): Promise<ActionResult> {
    const r = (outcome: ActionResult['outcome'], message: string): ActionResult => ({
      kind: 'notification',
      id,
      outcome,
      message,
    });
    const defaultUrl = this.options.defaultWebhookUrl ?? null;
    const once = req.url ? " (this once, instead of the tenant's target)" : '';
    if (req.dryRun) {
      const n = await this.writes.notification(id, defaultUrl);
      if (n?.status !== 'dead')
        return r('not-dead', `notification ${id} is ${n ? n.status : 'unknown'}; nothing to requeue`);
      const to = req.url ?? n.currentUrl ?? '(no target)';
      const moved = n.targetUrl && n.targetUrl !== to ? ` (it last went to ${n.targetUrl})` : '';
      return r(
        'would-requeue',
        `would send notification ${id} again now as attempt ${n.attempts + 1} to ${to}${once}${moved}, webhook-id ${id}`,
      );
    }
    const changed = await this.writes.requeueNotification(id, req.actor, { overrideUrl: req.url, defaultUrl });
    if (changed)
      return r(
        'requeued',
        `notification ${id} is pending again: sent now as attempt ${changed.attempts + 1} to ${changed.targetUrl ?? '(no target)'}${once}, same webhook-id ${id}`,
      );
    const state = await this.writes.notificationState(id);
    return r(
      'not-dead',
      state ? `notification ${id} is not dead: ${state.state}${since(state)}; nothing done` : `no notification ${id}`,
    );
  }

  private async discardNotification(id: string, req: ActionRequest): Promise<ActionResult> {
    const r = (outcome: ActionResult['outcome'], message: string): ActionResult => ({
      kind: 'notification',
      id,
      outcome,
      message,
    });
    if (req.dryRun) {
      const n = await this.writes.notification(id, null);
      return n?.status === 'dead'
        ? r('would-discard', `would mark notification ${id} discarded (never sent)`)
        : r('not-dead', `notification ${id} is ${n ? n.status : 'unknown'}; nothing to discard`);
    }
    if (await this.writes.discardNotification(id, req.actor))
      return r('discarded', `notification ${id} discarded: kept, never sent`);
    const state = await this.writes.notificationState(id);
    return r(
      'not-dead',
      state ? `notification ${id} is not dead: ${state.state}${since(state)}; nothing done` : `no notification ${id}`,
    );
  }

  /** The kit's consumer dead letters, with the tenant of each message's ticket (a tenant filter goes through the tickets). */
  private async listConsumer(f: DeadLetterFilter): Promise<DeadLetterItem[]> {
    const tickets = f.tenant ? await this.reads.consumerTicketsOfTenant(f.tenant) : undefined;
    if (tickets && tickets.length === 0) return [];
    const items = await this.consumer.list(this.consumerFilter(f, tickets));
    const tenants = await this.reads.tenantsOfTickets(items.flatMap((i) => (i.ticketId ? [i.ticketId] : [])));
    return items.map((i) => consumerItem(i, tenants.get(i.ticketId ?? '') ?? null));
  }

  private consumerFilter(f: DeadLetterFilter, tickets?: string[]): ConsumerDeadLetterFilter {
    return {
      id: f.id,
      ticket: f.ticket,
      tickets,
      groupId: f.group,
      reason: f.reason,
      since: f.since,
      until: f.until,
      limit: f.limit,
      all: f.all,
    };
  }

  private async consumerAction(action: 'requeue' | 'discard', req: ActionRequest): Promise<ActionResult[]> {
    const tickets =
      req.filter.tenant && !req.filter.id ? await this.reads.consumerTicketsOfTenant(req.filter.tenant) : undefined;
    if (tickets && tickets.length === 0) return [];
    const kitReq = { filter: this.consumerFilter(req.filter, tickets), actor: req.actor, dryRun: req.dryRun };
    const results: KitActionResult[] =
      action === 'requeue' ? await this.consumer.requeue(kitReq) : await this.consumer.discard(kitReq);
    return results.map((r) => ({ kind: 'consumer', ...r }));
  }
}

function consumerItem(i: ConsumerDeadLetterItem, tenant: string | null): DeadLetterItem {
  return {
    kind: 'consumer',
    id: i.id,
    state: i.state,
    tenant,
    ticketId: i.ticketId,
    eventId: i.eventId,
    eventType: i.eventType,
    reason: i.reason,
    attempts: null,
    deadAt: i.deadAt,
    where: i.where,
  };
}

/** The content with its JSON text fields (payload, value) as JSON, so it is shown as JSON, not as a quoted string. */
function jsonFields(content: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(content).map(([k, v]) => [k, k === 'payload' || k === 'value' ? asJson(v) : v]),
  );
}
