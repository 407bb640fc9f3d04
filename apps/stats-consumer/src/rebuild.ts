import { Kafka, logLevel } from 'kafkajs';
import { Pool } from 'pg';
import { forgetGroupInbox } from '@tickets/event-consumer/admin';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';
import { StatsProjectionRepository } from './stats-projection.repository';

export interface RebuildTarget {
  brokers: string[];
  topic: string;
  groupId: string;
  databaseUrl: string;
}

export class GroupBusyError extends Error {
  override name = 'GroupBusyError';
}

/**
 * Moves the group back to the earliest retained offset of every partition. With `clear`, it then
 * empties the group's projection and forgets its inbox in one transaction (a rebuild); without, every
 * event is read again and skipped by the inbox (a replay, which must change nothing).
 *
 * Offsets move first: a crash between the two steps leaves a replay of duplicates (harmless), while
 * the other order could leave an empty projection with offsets at the end. Kafka only moves the
 * offsets of a group without members, so it refuses while a consumer of the group runs.
 */
export async function resetStatsGroup(
  t: RebuildTarget,
  opts: { clear: boolean },
): Promise<{ cleared: boolean; inboxRowsForgotten: number }> {
  patchKafkajsRequestQueue();
  const admin = new Kafka({
    clientId: `stats-rebuild-${t.groupId}`,
    brokers: t.brokers,
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const members = async () => (await admin.describeGroups([t.groupId])).groups[0]?.members.length ?? 0;
    if ((await members()) > 0) {
      throw new GroupBusyError(
        `consumer group ${t.groupId} has live members: stop every stats consumer of the group first` +
          (opts.clear
            ? ''
            : ` (or replay without stopping them: npm run cli -- replay --group ${t.groupId} --from earliest --follow)`),
      );
    }
    await admin.resetOffsets({ groupId: t.groupId, topic: t.topic, earliest: true });
    if (!opts.clear) return { cleared: false, inboxRowsForgotten: 0 };
    const pool = new Pool({ connectionString: t.databaseUrl, max: 1, application_name: 'stats-rebuild' });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await new StatsProjectionRepository().clear(client, t.groupId);
      const forgotten = await forgetGroupInbox(client, t.groupId);
      if ((await members()) > 0)
        throw new GroupBusyError(
          `a consumer of ${t.groupId} joined during the rebuild: nothing was cleared, run it again`,
        );
      await client.query('COMMIT');
      return { cleared: true, inboxRowsForgotten: forgotten };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
      await pool.end();
    }
  } finally {
    await admin.disconnect();
  }
}
