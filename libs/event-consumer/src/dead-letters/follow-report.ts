import type { ConsumerDeadLetters } from './consumer-dead-letters';
import type { ConsumerDeadLetterDetail, FollowResult, KitActionResult, KitActor } from './consumer-dead-letters.types';

/** How a CLI spells its commands, for the advice in a follow's report. */
export interface FollowCommands {
  /** Requeue one dead letter of the group and follow it. */
  requeue(id: string, groupId: string): string;
  /** List the group's dead letters (of one ticket when known). */
  list(groupId: string, ticketId: string | null): string;
}

/**
 * What ConsumerDeadLetters.follow found, a line each, with what to do next: each copy dead again (its new dead
 * letter and reason), each refused requeue of the events held behind the copies, then the outcome.
 */
export function followReport(f: FollowResult, timeoutMs: number, cmd: FollowCommands): string[] {
  const lines: string[] = [];
  const deadAgain = f.copies.filter((c) => c.state === 'dead-again');
  for (const c of deadAgain) {
    const what = `the copy of ${c.id} (event ${c.eventId ?? '?'}) is consumer dead letter ${c.deadLetter} of group ${c.groupId}`;
    if (c.cause === 'held' && c.heldBy) {
      // Held behind another copy's dead letter: a requeue of that one takes it along.
      const behind = deadAgain.some((o) => o.deadLetter === c.heldBy);
      lines.push(
        `dead again: ${what}, held behind ${c.heldBy}: ${behind ? 'it comes back with that one' : `requeue that one (it takes this along): ${cmd.requeue(c.heldBy, c.groupId)}`}`,
      );
    } else if (c.cause === 'invalid')
      lines.push(`dead again: ${what}, which did not parse there (${c.reason}): that consumer cannot take it`);
    else lines.push(`dead again: ${what} (${c.reason}); fix the cause, then: ${cmd.requeue(c.deadLetter!, c.groupId)}`);
  }
  for (const r of f.requeued) if (r.outcome === 'refused') lines.push(`refused: ${r.message}`);
  const handled = f.copies.filter((c) => c.state === 'handled').length;
  const notRead = f.copies.filter((c) => c.state === 'not-read');
  const groups = [...new Set(f.copies.map((c) => c.groupId))].join(', ');
  const heldAfter = f.requeued.filter((r) => r.outcome === 'requeued').length;
  if (f.outcome === 'timeout') {
    const first = notRead[0];
    lines.push(
      `timed out after ${Math.round(timeoutMs / 1000)} s: ${notRead.length} of ${f.copies.length} copies not yet handled by group ${groups} (the requeue stands: the group handles them when it reads them). Is a consumer of the group running? See: ${first ? cmd.list(first.groupId, first.ticketId) : ''}`,
    );
  } else
    lines.push(
      `followed: group ${groups} handled ${handled} of ${f.copies.length} copies${heldAfter ? ` (${heldAfter} of them of events it had held behind the first copies, requeued after them)` : ''}`,
    );
  return lines;
}

/** How a CLI runs `requeue --follow` after its requeue: followRequeue. */
export interface FollowRequeueOptions {
  /** Give up after this long (the requeue stands). */
  timeoutMs: number;
  /** Who requeues the events held behind the copies. */
  actor: KitActor;
  /** One JSON document on `out` (`{ dryRun: false, results, follow }`); else the report's lines. */
  json: boolean;
  out(line: string): void;
  /** Follow's progress lines: on stderr with `json`, so that stdout stays one document. */
  progress(line: string): void;
  commands: FollowCommands;
}

/**
 * Follows the copies of a requeue (ConsumerDeadLetters.follow), prints what it found (followReport, or JSON)
 * and returns the exit code: 0 every copy handled, 1 one dead again or a requeue refused (by the requeue
 * itself or of the events held behind the copies), 4 timed out.
 */
export async function followRequeue(
  dl: Pick<ConsumerDeadLetters, 'follow'>,
  results: readonly KitActionResult[],
  o: FollowRequeueOptions,
): Promise<0 | 1 | 4> {
  const followed = await dl.follow(results, { timeoutMs: o.timeoutMs, actor: o.actor, progress: o.progress });
  if (o.json) o.out(JSON.stringify({ dryRun: false, results, follow: followed }));
  else for (const l of followReport(followed, o.timeoutMs, o.commands)) o.out(l);
  if (followed.outcome === 'timeout') return 4;
  return results.some((r) => r.outcome === 'refused') || followed.outcome !== 'handled' ? 1 : 0;
}

/**
 * Where a dead letter's event is now, a line each (for `dead-letters show`): a requeued one's copy (handled,
 * dead-lettered again, or not read yet), the events of its ticket held behind it, and the requeue to run next
 * with what its dry run found (the messages it would produce, or the dead letter it waits behind).
 */
export function deadLetterFate(
  d: Pick<ConsumerDeadLetterDetail, 'copy' | 'heldBehind' | 'next'> & {
    item: Pick<ConsumerDeadLetterDetail['item'], 'groupId' | 'ticketId'>;
  },
  cmd: FollowCommands,
): string[] {
  const lines: string[] = [];
  const g = d.item.groupId;
  const c = d.copy;
  if (c?.state === 'handled') lines.push(`copy: handled by group ${g}`);
  else if (c?.state === 'dead-again')
    lines.push(
      `copy: dead-lettered again as ${c.deadLetter} (${c.cause === 'held' && c.heldBy ? `held behind ${c.heldBy}` : c.reason})`,
    );
  else if (c) lines.push(`copy: not read by group ${g} yet (is a consumer of the group running?)`);
  const h = d.heldBehind;
  if (h)
    lines.push(
      `held behind it: ${h.count} event(s) of ticket ${d.item.ticketId ?? '?'}, still dead, the first ${h.first}${c?.state === 'not-read' ? `; once the copy is handled: ${cmd.requeue(h.first, g)}` : ''}`,
    );
  const [first] = d.next?.dryRun ?? [];
  if (d.next && first?.outcome === 'would-requeue')
    lines.push(`next: ${cmd.requeue(d.next.id, g)} (would produce ${d.next.dryRun.length} message(s), in their order)`);
  else if (first?.outcome === 'not-dead')
    lines.push(`next: nothing to requeue: ${first.message.replace(/; nothing done$/, '')}`);
  else if (first) lines.push(`next: ${first.message}`);
  return lines;
}
