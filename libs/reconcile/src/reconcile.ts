import { performance } from 'node:perf_hooks';
import type { PrismaClient } from '@tickets/db';
import { ReconcileRepository, type CheckId, type CheckParams } from './reconcile.repository';

export type { CheckId };

/**
 * The reconciliation: checks tickets, idempotency keys, the outbox and notifications against each
 * other and lists every disagreement with what to do about it.
 *
 * Windows: outbox rows are deleted OUTBOX_RETENTION after publishing and inbox rows after INBOX_RETENTION,
 * so "an event is missing" is only checked for tickets younger than `since`, and "not consumed yet" only
 * for events published before `grace`.
 */
export interface Finding {
  /** The check's stable id (a metric label: tickets_reconcile_findings{check}). */
  id: CheckId;
  check: string;
  count: number;
  sample: string[];
  advice: string;
}

export interface ReconcileOptions extends CheckParams {
  onProgress?: (done: number, total: number, name: string) => void;
  /** Awaited after each check with the milliseconds it took: the scheduled run's pacing (none: back to back). */
  pause?: (checkMs: number) => Promise<void>;
}

const CHECKS: Array<{ id: CheckId; name: string; advice: string }> = [
  {
    id: 'ticket-without-created-event',
    name: 'ticket without its ticket.created.v1 event',
    advice:
      'The create transaction writes both; this means rows were deleted by hand. Re-enqueue the event or investigate.',
  },
  {
    id: 'cancelled-without-cancelled-event',
    name: 'cancelled ticket without its ticket.cancelled.v1 event',
    advice: 'The cancel transaction writes both; investigate manual changes.',
  },
  {
    id: 'key-without-ticket',
    name: 'idempotency key pointing at a missing ticket',
    advice:
      'A key must resolve to the ticket it made; the ticket was deleted by hand. Delete the key or restore the ticket.',
  },
  {
    id: 'ticket-without-key',
    name: 'ticket created through the API without its idempotency key (within the key retention)',
    advice:
      'Only a purge past IDEMPOTENCY_KEY_RETENTION removes keys; a younger ticket without one means manual deletion.',
  },
  {
    id: 'outbox-unpublished',
    name: 'outbox event unpublished for longer than the grace period',
    advice:
      'Is a relay running (RELAY_ENABLED=true in the API, or npm run start:relay)? Is Kafka reachable? See outbox lag in /metrics.',
  },
  {
    id: 'outbox-dead-lettered',
    name: 'outbox event dead-lettered',
    advice:
      'The broker rejected it or it failed validation: see why with `npm run cli -- dead-letters list --kind outbox`, fix the cause, then `npm run cli -- dead-letters requeue --kind outbox --id <event id>` (the events of its ticket dead-lettered behind it follow it, in order), or `... discard` it.',
  },
  {
    id: 'event-not-consumed',
    name: 'published event not consumed by the notifier group',
    advice:
      'Is the consumer running (npm run start:consumer)? Check its lag; a replay (npm run cli -- replay) is safe. Messages it could not parse: `npm run cli -- dead-letters list --kind consumer`.',
  },
  {
    id: 'consumed-without-notification',
    name: 'consumed event without a notification',
    advice: 'The inbox row and the notification are written in one transaction; investigate manual deletes.',
  },
  {
    id: 'notification-dead',
    name: 'notification dead (gave up)',
    advice:
      'The webhook kept failing or was rejected: `npm run cli -- dead-letters show --id <id>` lists its attempts; fix the receiver, then `npm run cli -- dead-letters requeue --kind notification --id <id>` (same webhook-id, sent once), or `--tenant <slug>` for all of a tenant.',
  },
  {
    id: 'notification-pending',
    name: 'notification pending for longer than the grace period',
    advice: 'The dispatcher is behind or the receiver keeps failing; see notification_attempts.',
  },
  {
    id: 'duplicate-ticket',
    name: 'ticket duplicating an earlier one (same externalRef in its tenant, or same intent: same Idempotency-Key)',
    advice:
      'Two tickets for one request: the unique externalRef index or the key check was bypassed, or an agent re-sent an intent after its key expired (IDEMPOTENCY_KEY_RETENTION). Compare the two with GET /v1/tickets?externalRef=..., cancel the later one with POST /v1/tickets/{id}/cancel, and find the caller that made a new request for an old intent.',
  },
];

/** Every check's id, in the order they run (the label values of tickets_reconcile_findings). */
export const CHECK_IDS: readonly CheckId[] = CHECKS.map((c) => c.id);

/** Counts stop here: past it the number only says "very many". */
const COUNT_LIMIT = 100_001;

/** One reconciliation: what it found, and the duplicate-creation rate's numerator and denominator. */
export interface ReconcileReport {
  startedAt: Date;
  finishedAt: Date;
  /** Tickets created inside the window (`since`). */
  ticketsChecked: number;
  /** Tickets of the window duplicating an earlier one (the `duplicate-ticket` check's count). */
  duplicateTickets: number;
  findings: Finding[];
}

/** Read-only; each check is its own statement (no snapshot across checks), so it can run beside live traffic. */
export async function reconcile(prisma: PrismaClient, opts: ReconcileOptions): Promise<Finding[]> {
  return (await reconcileReport(prisma, opts)).findings;
}

/** reconcile(), with the counts a run record (ReconcileRunsRepository) keeps. Read-only. */
export async function reconcileReport(prisma: PrismaClient, opts: ReconcileOptions): Promise<ReconcileReport> {
  const startedAt = new Date();
  const repo = new ReconcileRepository(prisma);
  const findings: Finding[] = [];
  for (const [i, check] of CHECKS.entries()) {
    opts.onProgress?.(i, CHECKS.length, check.name);
    const started = performance.now();
    const ids = await repo.offenders(check.id, opts, COUNT_LIMIT);
    await opts.pause?.(performance.now() - started);
    if (ids.length)
      findings.push({
        id: check.id,
        check: check.name,
        count: ids.length,
        sample: ids.slice(0, 5),
        advice: check.advice,
      });
  }
  const ticketsChecked = await repo.ticketsSince(opts);
  opts.onProgress?.(CHECKS.length, CHECKS.length, 'done');
  const duplicateTickets = findings.find((f) => f.id === 'duplicate-ticket')?.count ?? 0;
  return { startedAt, finishedAt: new Date(), ticketsChecked, duplicateTickets, findings };
}

/** duplicate tickets / tickets checked; 0 when no ticket was checked. */
export function duplicateCreationRatio(run: Pick<ReconcileReport, 'ticketsChecked' | 'duplicateTickets'>): number {
  return run.ticketsChecked > 0 ? run.duplicateTickets / run.ticketsChecked : 0;
}

/** The findings as lines for a person: one block per check, with a sample and the advice. */
export function formatFindings(findings: Finding[]): string[] {
  if (!findings.length) return ['reconcile: everything agrees (tickets, keys, outbox, inbox, notifications)'];
  return findings.map((f) => `${f.count} × ${f.check}\n    e.g. ${f.sample.join(', ')}\n    what to do: ${f.advice}`);
}
