import { buildOutboundMessage, type OutboxRow } from '@tickets/outbox';

/** An outbox dead letter as the requeue reads it: the columns the relay validates, and why it died. */
export interface OutboxDeadRow extends Omit<OutboxRow, 'blockedBy'> {
  reason: string;
}

export const BLOCKED_PREFIX = 'blocked_by_dead_letter:';

export type OutboxRequeuePlan =
  | { kind: 'not-dead' }
  /** An earlier dead letter of the same ticket is still there: the relay would dead-letter this one again behind it. */
  | { kind: 'held-back'; by: OutboxDeadRow }
  /** The relay would dead-letter these again at once (their envelope fails validation). */
  | { kind: 'invalid'; rows: Array<{ row: OutboxDeadRow; reason: string }> }
  /** Move these back, in this (seq) order. */
  | { kind: 'requeue'; rows: OutboxDeadRow[] };

/**
 * What requeuing `eventId` means, given every dead letter of its ticket in seq order: the ticket's
 * earliest dead letter goes back together with the rows that were dead-lettered only because they
 * followed it (reason blocked_by_dead_letter:...), up to the next row that failed on its own. Any
 * later dead letter is held back by an earlier one, exactly as the relay's claim would hold it back.
 * Pure; the caller reads the rows (locked) and moves them.
 */
export function planOutboxRequeue(ticketRows: OutboxDeadRow[], eventId: string): OutboxRequeuePlan {
  const at = ticketRows.findIndex((r) => r.eventId === eventId);
  if (at < 0) return { kind: 'not-dead' };
  if (at > 0) return { kind: 'held-back', by: ticketRows[0] };
  const rows = [ticketRows[0]];
  for (const r of ticketRows.slice(1)) {
    if (!r.reason.startsWith(BLOCKED_PREFIX)) break;
    rows.push(r);
  }
  const invalid = rows.flatMap((row) => {
    const built = buildOutboundMessage({ ...row, blockedBy: null });
    return built.ok ? [] : [{ row, reason: built.reason }];
  });
  return invalid.length ? { kind: 'invalid', rows: invalid } : { kind: 'requeue', rows };
}
