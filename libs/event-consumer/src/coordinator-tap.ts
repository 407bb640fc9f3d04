import type { Consumer, ConsumerConfig, Kafka } from 'kafkajs';

// kafkajs 2.2.4 internals used here: the client keeps its cluster factory under an own symbol property
// 'private:Kafka:createCluster' (kafka.consumer() calls it synchronously), every join asks the cluster
// for the group coordinator (Cluster#findGroupCoordinator), and a broker sends each request through
// Broker#connectionPool.send. A JoinGroup answers the member id, or fails with MEMBER_ID_REQUIRED
// (KIP-394) carrying the id of a pending member (KafkaJSMemberIdRequired#memberId).

/** kafkajs API keys of the group requests. */
export const API_KEYS = { JoinGroup: 11, SyncGroup: 14 } as const;

interface PoolLike {
  send(request: { request: { apiKey: number } }): Promise<unknown>;
}
export interface ClusterLike {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(request: { groupId: string }): Promise<{
    connectionPool?: PoolLike;
    leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown>;
  }>;
}
type ClusterFactory = (options: object) => ClusterLike;

/** The client's private cluster factory, or undefined when this kafkajs has none. */
export function clusterFactory(kafka: Kafka): { key: symbol; create: ClusterFactory } | undefined {
  const key = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const create = key === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[key];
  return key !== undefined && typeof create === 'function' ? { key, create: create as ClusterFactory } : undefined;
}

/** Sends a request, or does something around it: `send` is the coordinator's own. */
export type CoordinatorTap = (apiKey: number, send: () => Promise<unknown>) => Promise<unknown>;

/** Every request `cluster` sends to its group coordinator goes through `tap`. */
export function tapCoordinator(cluster: ClusterLike, tap: CoordinatorTap): void {
  const tapped = new WeakSet<PoolLike>();
  const find = cluster.findGroupCoordinator.bind(cluster);
  cluster.findGroupCoordinator = async (request) => {
    const coordinator = await find(request);
    const pool = coordinator?.connectionPool;
    if (pool && !tapped.has(pool)) {
      tapped.add(pool);
      const send = pool.send.bind(pool);
      pool.send = (r) => tap(r.request.apiKey, () => send(r));
    }
    return coordinator;
  };
}

/**
 * `kafka.consumer(config)`, whose JoinGroup answers report every member id they hand out (joined or
 * pending) to `onMemberId`. Without the private factory: a plain consumer that reports nothing.
 */
export function consumerWithJoinTap(
  kafka: Kafka,
  config: ConsumerConfig,
  onMemberId: (memberId: string) => void,
): Consumer {
  const factory = clusterFactory(kafka);
  if (!factory) return kafka.consumer(config);
  const slot = kafka as unknown as Record<symbol, ClusterFactory>;
  slot[factory.key] = (options) => {
    const cluster = factory.create(options);
    tapCoordinator(cluster, async (apiKey, send) => {
      if (apiKey !== API_KEYS.JoinGroup) return send();
      try {
        const answer = (await send()) as { memberId?: string } | undefined;
        if (answer?.memberId) onMemberId(answer.memberId);
        return answer;
      } catch (err) {
        const pending = (err as { memberId?: unknown } | undefined)?.memberId;
        if (typeof pending === 'string' && pending) onMemberId(pending);
        throw err;
      }
    });
    return cluster;
  };
  try {
    return kafka.consumer(config); // synchronous: no other caller sees the swapped factory
  } finally {
    slot[factory.key] = factory.create;
  }
}
