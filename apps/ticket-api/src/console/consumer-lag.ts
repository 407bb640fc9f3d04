import type { Admin, Kafka } from 'kafkajs';

export interface PartitionLag {
  partition: number;
  /** The group's committed offset, null when it has committed none on this partition. */
  committed: string | null;
  high: string;
  /** Messages the group has not processed yet (from the low watermark when it has committed none). */
  lag: number;
}

export interface GroupLag {
  groupId: string;
  /** Kafka's group state (Stable, Empty, PreparingRebalance, Dead ...); Empty: no consumer running. */
  state: string;
  members: number;
  totalLag: number;
  partitions: PartitionLag[];
}

export type LagReport = { ok: true; topic: string; groups: GroupLag[] } | { ok: false; topic: string; error: string };

/**
 * Consumer lag per group from the broker: committed offsets against the high watermarks. One admin
 * client, connected on first use and again after an error; each read is bounded by `timeoutMs` so a
 * broker outage makes the panel say so instead of holding the page.
 */
export class ConsumerLag {
  private admin?: Promise<Admin>;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly timeoutMs = 5_000,
  ) {}

  async report(groupIds: string[]): Promise<LagReport> {
    try {
      return { ok: true, topic: this.topic, groups: await this.bounded(this.read(groupIds)) };
    } catch (e) {
      const admin = this.admin;
      this.admin = undefined;
      void admin?.then((a) => a.disconnect()).catch(() => undefined);
      return { ok: false, topic: this.topic, error: (e as Error).message };
    }
  }

  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.then((a) => a.disconnect()).catch(() => undefined);
  }

  private async read(groupIds: string[]): Promise<GroupLag[]> {
    this.admin ??= (async () => {
      const a = this.kafka.admin();
      await a.connect();
      return a;
    })();
    const admin = await this.admin;
    const [bounds, described] = await Promise.all([
      admin.fetchTopicOffsets(this.topic),
      admin.describeGroups(groupIds),
    ]);
    return Promise.all(
      groupIds.map(async (groupId) => {
        const [committed] = await admin.fetchOffsets({ groupId, topics: [this.topic] });
        const partitions = bounds
          .map((b) => {
            const c = committed?.partitions.find((p) => p.partition === b.partition)?.offset;
            const has = c !== undefined && c !== '-1';
            const from = BigInt(has ? c : b.low);
            const lag = BigInt(b.high) - from;
            return {
              partition: b.partition,
              committed: has ? c : null,
              high: b.high,
              lag: Number(lag > 0n ? lag : 0n),
            };
          })
          .sort((a, b) => a.partition - b.partition);
        const g = described.groups.find((x) => x.groupId === groupId);
        return {
          groupId,
          state: g?.state ?? 'Unknown',
          members: g?.members.length ?? 0,
          totalLag: partitions.reduce((s, p) => s + p.lag, 0),
          partitions,
        };
      }),
    );
  }

  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the broker did not answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }
}
