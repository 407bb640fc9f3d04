import { Kafka, logLevel, type Producer } from 'kafkajs';
import { patchKafkajsProduceEncoding } from '../kafkajs-produce-encoding';
import { patchKafkajsRequestQueue } from '../kafkajs-request-queue';

export interface RawMessageOut {
  topic: string;
  key: Buffer | null;
  value: Buffer;
  headers: Record<string, Buffer>;
}

/** Produces one stored message again; resolves with where the broker appended it. */
export interface MessageRepublisher {
  send(message: RawMessageOut): Promise<{ partition: number; offset: string }>;
  close(): Promise<void>;
}

/**
 * A kafkajs producer for consumer dead letters: the stored bytes, key and headers as they were, acks
 * from all in-sync replicas, the default partitioner (same key, same partition as any other message
 * of that ticket). Connects on the first send, so listing and dry runs never touch the broker.
 */
export function kafkaRepublisher(brokers: string[], clientId: string): MessageRepublisher {
  let producer: Producer | undefined;
  return {
    async send(m) {
      if (!producer) {
        patchKafkajsRequestQueue();
        patchKafkajsProduceEncoding();
        producer = new Kafka({ brokers, clientId, logLevel: logLevel.NOTHING }).producer({
          allowAutoTopicCreation: false,
        });
        await producer.connect();
      }
      const [meta] = await producer.send({
        topic: m.topic,
        acks: -1,
        messages: [{ key: m.key, value: m.value, headers: m.headers }],
      });
      return { partition: meta.partition, offset: meta.baseOffset ?? meta.offset ?? '?' };
    },
    async close() {
      await producer?.disconnect();
    },
  };
}
