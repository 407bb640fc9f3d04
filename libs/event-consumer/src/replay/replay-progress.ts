import type { Admin } from 'kafkajs';
import type { ReplayProgress, ReplayRepository } from './replay.repository';
import { seconds, sleep, type ReplayTiming } from './replay-timing';

export type FollowOutcome = 'completed' | 'failed' | 'timeout';

const processedAsNew = (p: ReplayProgress) => p.reread - p.skipped - p.invalid - p.deadLettered;

export function progressLine(p: ReplayProgress): string {
  const pct = p.total === 0 ? 100 : Math.floor((p.reread / p.total) * 100);
  const dead = p.deadLettered ? `, ${p.deadLettered} dead-lettered (failed, held)` : '';
  return `re-read ${p.reread}/${p.total} (${pct}%), skipped ${p.skipped} as already processed, ${processedAsNew(p)} new${dead}, ${p.invalid} invalid`;
}

/**
 * The closing report: how many messages were re-read, how many of them were skipped as already processed,
 * how many were dead-lettered and how many no member counted; with `list` (how the caller's CLI lists the
 * group's open dead letters) where to look when there are any.
 */
export function replayReport(p: ReplayProgress, elapsedMs: number, list?: string): string {
  const uncounted = p.total - p.reread;
  return [
    `replay ${p.id} of group ${p.groupId} on ${p.topic} from ${p.fromSpec} finished in ${seconds(elapsedMs)}:`,
    `  re-read                      ${p.reread} of ${p.total}`,
    `  skipped (already processed)  ${p.skipped}`,
    `  processed as new             ${processedAsNew(p)}`,
    `  dead-lettered (failed, held) ${p.deadLettered}`,
    `  dead-lettered (invalid)      ${p.invalid}`,
    ...(uncounted > 0
      ? [
          `  not counted                  ${uncounted} (a member of an earlier kit counts nothing; a batch handler that owns the inbox counts what its statement wrote)`,
        ]
      : []),
    ...((p.deadLettered + p.invalid > 0 || uncounted > 0) && list ? [`the group's open dead letters: ${list}`] : []),
  ].join('\n');
}

/**
 * Polls the replay's counters and the group's committed offsets until every partition has passed its end
 * offset, printing progress, then the report; marks the replay completed (own statement).
 */
export async function followReplay(
  admin: Admin,
  repo: ReplayRepository,
  id: string,
  timing: ReplayTiming,
  out: (line: string) => void,
  deadLetters?: (groupId: string, since: Date) => string,
): Promise<FollowOutcome> {
  const first = await repo.progress(id);
  if (!first) throw new Error(`replay ${id} not found`);
  let last = '';
  let lastAt = Date.now();
  for (;;) {
    // Offsets first, counters second: the counters are written in the same statement as the inbox rows,
    // before the offset commit, so counters read after offsets that passed the end offsets are final.
    // (Read the other way round, a commit landing between the two reads reports stale counters.)
    const [committed] = await admin.fetchOffsets({ groupId: first.groupId, topics: [first.topic] });
    const offsetOf = (partition: number) =>
      BigInt(committed?.partitions.find((c) => c.partition === partition)?.offset ?? '-1');
    const p = await repo.progress(id);
    if (!p) throw new Error(`replay ${id} not found`);
    if (p.status === 'superseded' || p.status === 'failed') {
      out(`replay ${id} is ${p.status}`);
      return 'failed';
    }
    const done = p.partitions.every((x) => x.start >= x.end || offsetOf(x.partition) >= x.end);
    const line = progressLine(p);
    if (line !== last || done) {
      out(line);
      last = line;
      lastAt = Date.now();
    } else if (Date.now() - lastAt > 10_000) {
      out(
        `${line} (no progress for ${seconds(Date.now() - lastAt)}: are the consumers of group ${p.groupId} running?)`,
      );
      lastAt = Date.now();
    }
    if (done) {
      if (p.status === 'running') await repo.finish(id, 'completed');
      out(replayReport(p, Date.now() - p.startedAt.getTime(), deadLetters?.(p.groupId, p.startedAt)));
      return 'completed';
    }
    if (Date.now() > timing.deadline) {
      out(`replay: timed out following replay ${id} (${line}); run again with --follow to keep following`);
      return 'timeout';
    }
    await sleep(timing.pollMs);
  }
}
