import type { Admin } from 'kafkajs';
import { ensureTopic } from './topic';

/** An admin client that knows `existing` topics and records createTopics calls. */
function fakeAdmin(existing: string[], createError?: Error) {
  const created: unknown[] = [];
  const admin = {
    listTopics: async () => existing,
    createTopics: async (request: unknown) => {
      if (createError) throw createError;
      created.push(request);
      return true;
    },
  } as unknown as Admin;
  return { admin, created };
}

describe('ensureTopic', () => {
  it('creates a missing topic with its partitions, retention, replication factor and min.insync.replicas', async () => {
    const { admin, created } = fakeAdmin([]);
    await expect(
      ensureTopic(admin, {
        topic: 'ticket-events',
        partitions: 6,
        retentionMs: 604_800_000,
        replicationFactor: 3,
        minInsyncReplicas: 2,
      }),
    ).resolves.toBe(true);
    expect(created).toEqual([
      {
        topics: [
          {
            topic: 'ticket-events',
            numPartitions: 6,
            replicationFactor: 3,
            configEntries: [
              { name: 'retention.ms', value: '604800000' },
              { name: 'min.insync.replicas', value: '2' },
            ],
          },
        ],
        waitForLeaders: true,
      },
    ]);
  });

  it("leaves replication and retention to the broker's defaults when not given", async () => {
    const { admin, created } = fakeAdmin([]);
    await ensureTopic(admin, { topic: 't', partitions: 1 });
    expect(created).toEqual([
      { topics: [{ topic: 't', numPartitions: 1, replicationFactor: -1, configEntries: [] }], waitForLeaders: true },
    ]);
  });

  it('leaves an existing topic as it is', async () => {
    const { admin, created } = fakeAdmin(['ticket-events']);
    await expect(ensureTopic(admin, { topic: 'ticket-events', partitions: 6, replicationFactor: 3 })).resolves.toBe(
      false,
    );
    expect(created).toEqual([]);
  });

  it('losing the creation race to another relay is not an error; other failures are', async () => {
    const exists = Object.assign(new Error('Topic with this name already exists'), { type: 'TOPIC_ALREADY_EXISTS' });
    await expect(ensureTopic(fakeAdmin([], exists).admin, { topic: 't', partitions: 1 })).resolves.toBe(false);
    const refused = Object.assign(new Error('Replication factor: 3 larger than available brokers: 1'), {
      type: 'INVALID_REPLICATION_FACTOR',
    });
    await expect(
      ensureTopic(fakeAdmin([], refused).admin, { topic: 't', partitions: 1, replicationFactor: 3 }),
    ).rejects.toThrow(/Replication factor/);
  });
});
