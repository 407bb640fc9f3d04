import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import type { KitLogger as Logger } from './kit-logger';

/**
 * Waits for the topic (the outbox relay creates it), then refuses to start when the topic keeps
 * messages longer than the inbox keeps event ids: a replay would then reach events the inbox has
 * forgotten and handle them a second time. Kafka owns retention.ms, so the kit can only refuse.
 */
export async function checkTopicRetention(
  kafka: Kafka,
  topic: string,
  inboxRetentionMs: number,
  stopped: () => boolean,
  log?: Logger,
): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    for (let waited = 0; !(await admin.listTopics()).includes(topic); waited += 1000) {
      if (stopped()) throw new Error(`stopped while waiting for topic ${topic}`);
      if (waited % 30_000 === 0) log?.warn(`topic ${topic} does not exist yet (the outbox relay creates it); waiting`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
    });
    const value = res.resources[0]?.configEntries.find((c) => c.configName === 'retention.ms')?.configValue;
    const topicMs = value === undefined ? undefined : Number(value);
    if (topicMs !== undefined && (topicMs < 0 || topicMs > inboxRetentionMs)) {
      throw new Error(
        `topic ${topic} keeps messages for ${topicMs < 0 ? 'ever' : `${topicMs} ms`} but the inbox keeps event ids for ${inboxRetentionMs} ms: ` +
          'a replay would handle the oldest events a second time. Raise inbox.retentionMs (INBOX_RETENTION) or lower the topic retention.ms.',
      );
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
