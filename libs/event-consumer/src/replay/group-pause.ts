import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Admin, GroupDescription } from 'kafkajs';
import type { Pool } from 'pg';
import { GroupPauseRepository } from '../group-pause.repository';
import type { KitTables } from '../kit-schema';
import { seconds, sleep, type ReplayTiming } from './replay-timing';

export interface PauseSettings {
  /** How long the request stays in force without a renewal: a replay command that died frees the group after this. */
  leaseMs: number;
  /** How long the members get to finish their chunk and leave. */
  waitMs: number;
}

export interface PauseHold {
  /** Ends the request (the members rejoin); stops the renewals. Never throws: an unreleased request expires. */
  release(): Promise<void>;
}

export type PauseOutcome = { paused: true; hold: PauseHold } | { paused: false; outcome: 'group-busy' | 'timeout' };

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
export const memberNames = (g: GroupDescription | undefined) =>
  (g?.members ?? []).map((m) => `${m.clientId}@${m.clientHost}`).join(', ');

/**
 * Asks the live members of a group built on the consumer kit to leave it (replay_pauses in the kit's
 * schema, which every member reads), renews the request while the replay needs it, and waits until the broker shows the
 * group empty. Each member finishes and commits its chunk in progress before it leaves; members that
 * start meanwhile do not join. On a timeout the request is released and the group is left as it was.
 */
export async function pauseGroup(
  admin: Admin,
  pool: Pool,
  tables: KitTables,
  group: GroupDescription,
  settings: PauseSettings,
  timing: ReplayTiming,
  out: (line: string) => void,
): Promise<PauseOutcome> {
  const repo = new GroupPauseRepository(tables);
  const requestId = randomUUID();
  const claim = await repo.request(
    pool,
    group.groupId,
    requestId,
    `replay on ${hostname()} (pid ${process.pid})`,
    settings.leaseMs,
  );
  if (!claim.claimed) {
    out(
      `replay: group ${group.groupId} is already paused by another replay (${claim.holder.requestedBy}, request in force until ${claim.holder.expiresAt.toISOString()}).\n` +
        `Let it finish (follow it with: replay --group ${group.groupId} --follow), then run this again.`,
    );
    return { paused: false, outcome: 'group-busy' };
  }
  let lost = false;
  const renewal = setInterval(
    () => {
      repo
        .renew(pool, group.groupId, requestId, settings.leaseMs)
        .then((ok) => {
          if (!ok && !lost)
            out(
              `replay: the pause request of group ${group.groupId} is gone (deleted by hand?): its members may rejoin before the offsets move`,
            );
          lost ||= !ok;
        })
        .catch((err) =>
          out(`replay: could not renew the pause of group ${group.groupId} (${(err as Error).message}); retrying`),
        );
    },
    Math.max(100, Math.floor(settings.leaseMs / 3)),
  );
  const hold: PauseHold = {
    release: async () => {
      clearInterval(renewal);
      await repo
        .release(pool, group.groupId, requestId)
        .catch((err) =>
          out(
            `replay: could not release the pause of group ${group.groupId} (${(err as Error).message}); its members rejoin when it expires`,
          ),
        );
    },
  };

  const t0 = Date.now();
  const deadline = Math.min(timing.deadline, t0 + settings.waitMs);
  out(
    `asking ${plural(group.members.length, 'member')} of ${group.groupId} to pause (${memberNames(group)}): each finishes and commits its chunk in progress, then leaves the group`,
  );
  let shownAt = t0;
  for (;;) {
    const g = (await admin.describeGroups([group.groupId])).groups[0];
    const left = g?.members.length ?? 0;
    if (left === 0) {
      out(`group ${group.groupId} empty after ${seconds(Date.now() - t0)}`);
      return { paused: true, hold };
    }
    if (Date.now() > deadline) {
      await hold.release();
      out(
        `replay: ${plural(left, 'member')} of group ${group.groupId} did not leave within ${seconds(Date.now() - t0)} (${memberNames(g)}); nothing was changed.\n` +
          `A member leaves only if it runs the consumer kit (@tickets/event-consumer) with pause support against this database and schema ${tables.schema}. ` +
          'Stop those consumers, then run this again; or check their logs for "group paused by a replay" (a member that saw the request and is still finishing a long chunk).',
      );
      return { paused: false, outcome: 'timeout' };
    }
    if (Date.now() - shownAt >= 5_000) {
      out(
        `still waiting for ${plural(left, 'member')} of ${group.groupId} to leave (${memberNames(g)}), ${seconds(Date.now() - t0)}`,
      );
      shownAt = Date.now();
    }
    await sleep(Math.min(timing.pollMs, 200));
  }
}

/** After the pause: waits (bounded) until as many members as before are back, and says so. */
export async function awaitRejoin(
  admin: Admin,
  groupId: string,
  expected: number,
  waitMs: number,
  out: (line: string) => void,
): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const n = (await admin.describeGroups([groupId])).groups[0]?.members.length ?? 0;
    if (n >= expected) {
      out(`${n} of ${expected} members back in group ${groupId} after ${seconds(Date.now() - t0)}`);
      return;
    }
    if (Date.now() - t0 > waitMs) {
      out(
        `${n} of ${expected} members back in group ${groupId} after ${seconds(Date.now() - t0)}; the others join when they start again (the replay goes on meanwhile)`,
      );
      return;
    }
    await sleep(200);
  }
}
