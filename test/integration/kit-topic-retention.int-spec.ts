// The kit's start-up check of the topic's retention against the inbox's, on the real broker: a record can
// outlive retention.ms by up to segment.ms (a segment goes only once its newest record is past retention.ms),
// and a compacted topic keeps records for ever; a replay of records the inbox forgot would apply them again.
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { checkTopicRetention } from '@tickets/event-consumer/topic-retention';
import { TEST_KAFKA_BROKERS } from '../support/env';

const DAY = 86_400_000;
const CHECK_MS = 5 * 60_000;

describe('checkTopicRetention', () => {
  const kafka = new Kafka({
    clientId: 'kit-topic-retention-test',
    brokers: TEST_KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const topics: string[] = [];

  const topicWith = async (config: Record<string, string>): Promise<string> => {
    const topic = `kit-retention-${randomUUID()}`;
    topics.push(topic);
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          numPartitions: 1,
          configEntries: Object.entries(config).map(([name, value]) => ({ name, value })),
        },
      ],
    });
    return topic;
  };
  const check = (topic: string, inboxMs: number) => checkTopicRetention(kafka, topic, inboxMs, () => false);

  beforeAll(async () => {
    await admin.connect();
  });
  afterAll(async () => {
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
  });

  it('counts segment.ms on top of retention.ms: an inbox as long as the topic retention is refused, one that covers both starts', async () => {
    const topic = await topicWith({ 'retention.ms': String(DAY), 'segment.ms': String(DAY) });
    await expect(check(topic, DAY)).rejects.toThrow(
      `topic ${topic} may keep a message for 2d 5m (retention.ms ${DAY} = 1d, + segment.ms ${DAY} = 1d: a segment goes only once its ` +
        `newest record is past retention.ms; + 5m for the broker's retention check) but the inbox keeps event ids ` +
        `for 1d: a replay would handle the oldest events a second time.`,
    );
    await expect(check(topic, 2 * DAY)).rejects.toThrow(
      `Raise inbox.retentionMs (INBOX_RETENTION) to at least ${2 * DAY + CHECK_MS} ms (INBOX_RETENTION=3d covers it)`,
    );
    await expect(check(topic, 2 * DAY + CHECK_MS)).resolves.toBeUndefined();
  });

  it('refuses a topic that keeps messages for ever, and a compacted one', async () => {
    const forever = await topicWith({ 'retention.ms': '-1' });
    await expect(check(forever, 365 * DAY)).rejects.toThrow(`topic ${forever} keeps messages for ever`);
    const compacted = await topicWith({ 'cleanup.policy': 'compact' });
    await expect(check(compacted, 365 * DAY)).rejects.toThrow(/is compacted \(cleanup.policy=compact\)/);
  });
});
