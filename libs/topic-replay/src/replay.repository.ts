import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '@tickets/db';

export interface ReplayPartitionPlan {
  partition: number;
  /** Where the group's offset is moved to. */
  start: bigint;
  /** The high watermark at replay time: messages below it are "re-read". */
  end: bigint;
}

export interface ReplayProgress {
  id: string;
  groupId: string;
  topic: string;
  fromSpec: string;
  status: string;
  startedAt: Date;
  /** Messages to re-read: sum of end - start. */
  total: number;
  reread: number;
  skipped: number;
  invalid: number;
  partitions: { partition: number; start: bigint; end: bigint }[];
}

/** The replays / replay_partitions rows behind `npm run cli -- replay` (the consumer writes the counters). */
export class ReplayRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Records a replay (own transaction): earlier running replays of the same group and topic are superseded. */
  async create(groupId: string, topic: string, fromSpec: string, plan: ReplayPartitionPlan[]): Promise<string> {
    const id = randomUUID();
    await this.prisma.$transaction([
      this.prisma.replay.updateMany({ where: { groupId, topic, status: 'running' }, data: { status: 'superseded', finishedAt: new Date() } }),
      this.prisma.replay.create({
        data: {
          id,
          groupId,
          topic,
          fromSpec,
          partitions: { create: plan.map((p) => ({ partition: p.partition, startOffset: p.start, endOffset: p.end, lastOffset: p.start - 1n })) },
        },
      }),
    ]);
    return id;
  }

  /** Own statement, outside any transaction. */
  async finish(id: string, status: 'completed' | 'failed'): Promise<void> {
    await this.prisma.replay.update({ where: { id }, data: { status, finishedAt: new Date() } });
  }

  /** The latest replay of a group (and topic), for `--follow` without `--from`. */
  async latest(groupId: string, topic: string): Promise<string | undefined> {
    const r = await this.prisma.replay.findFirst({ where: { groupId, topic }, orderBy: { startedAt: 'desc' }, select: { id: true } });
    return r?.id;
  }

  /** One read (the replay with its partitions). */
  async progress(id: string): Promise<ReplayProgress | undefined> {
    const r = await this.prisma.replay.findUnique({ where: { id }, include: { partitions: { orderBy: { partition: 'asc' } } } });
    if (!r) return undefined;
    const parts = r.partitions;
    const sum = (f: (p: (typeof parts)[number]) => number) => parts.reduce((a, p) => a + f(p), 0);
    return {
      id: r.id,
      groupId: r.groupId,
      topic: r.topic,
      fromSpec: r.fromSpec,
      status: r.status,
      startedAt: r.startedAt,
      total: sum((p) => Number(p.endOffset - p.startOffset)),
      reread: sum((p) => p.reread),
      skipped: sum((p) => p.skipped),
      invalid: sum((p) => p.invalid),
      partitions: r.partitions.map((p) => ({ partition: p.partition, start: p.startOffset, end: p.endOffset })),
    };
  }
}
