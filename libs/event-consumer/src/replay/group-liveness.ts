import type { Admin } from 'kafkajs';
import { seconds, sleep, type ReplayTiming } from './replay-timing';

export type GroupLiveness = 'empty' | 'busy' | 'timeout';

/**
 * Kafka lets a group's offsets move only while the group has no live members. For a replay with
 * --no-pause (group-pause.ts asks members to leave otherwise): without `wait` a busy group is refused at once, naming its members; with `wait` this polls describeGroups until it is empty.
 * Reads the broker only; no database.
 */
export async function awaitEmptyGroup(
  admin: Admin,
  groupId: string,
  wait: boolean,
  timing: ReplayTiming,
  out: (line: string) => void,
): Promise<GroupLiveness> {
  const t0 = Date.now();
  let last = '';
  let lastAt = 0;
  for (;;) {
    const { groups } = await admin.describeGroups([groupId]);
    const g = groups[0];
    const members = g?.members ?? [];
    if (members.length === 0) {
      if (wait && last) out(`group ${groupId} is empty (${g?.state ?? 'unknown'}) after ${seconds(Date.now() - t0)}`);
      return 'empty';
    }
    const who = members.map((m) => `${m.clientId}@${m.clientHost}`).join(', ');
    if (!wait) {
      out(
        `replay: consumer group "${groupId}" has ${members.length} live member(s) (state ${g.state}: ${who}).\n` +
          'Offsets can only be moved while the group is empty: run this again without --no-pause to ask its members to pause, stop its consumers first, or pass --wait to wait for them to stop.',
      );
      return 'busy';
    }
    const line = `waiting for group ${groupId} to become empty: ${members.length} live member(s) (state ${g.state}: ${who})`;
    if (line !== last || Date.now() - lastAt > 10_000) {
      out(`${line}, ${seconds(Date.now() - t0)}`);
      last = line;
      lastAt = Date.now();
    }
    if (Date.now() > timing.deadline) {
      out(`replay: timed out waiting for group ${groupId} to become empty`);
      return 'timeout';
    }
    await sleep(timing.pollMs);
  }
}
