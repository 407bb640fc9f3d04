import type { Kafka } from 'kafkajs';
import { clusterFactory } from './coordinator-tap';

/** What became of a stale member: removed, already gone, or the client has no way to say it. */
export type LeaveOutcome = 'left' | 'unknown' | 'unsupported';

/**
 * Takes member `memberId` out of group `groupId` at the group's coordinator (a LeaveGroup request
 * on its behalf). A kafkajs consumer that gave up while the coordinator was unreachable could not
 * leave: its member stays in the group until its session times out, and every join waits for it,
 * since a rebalance waits for all known members. After a broker outage that is one session timeout
 * (10 s) before the first message; leaving for the dead consumer lets the next join finish at once.
 * kafkajs has no public call for it, so this uses the client's own cluster and broker objects (the
 * same request kafkajs sends from consumer.disconnect()). Throws while the coordinator does not
 * answer (the caller retries with its backoff).
 */
export async function leaveAsStaleMember(kafka: Kafka, groupId: string, memberId: string): Promise<LeaveOutcome> {
  const factory = clusterFactory(kafka);
  if (!factory) return 'unsupported';
  const cluster = factory.create({ allowAutoTopicCreation: false });
  try {
    await cluster.connect();
    const coordinator = await cluster.findGroupCoordinator({ groupId });
    await coordinator.leaveGroup({ groupId, memberId });
    return 'left';
  } catch (err) {
    if ((err as { type?: string }).type === 'UNKNOWN_MEMBER_ID') return 'unknown';
    throw err;
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
}
