import { type Admin, type Kafka, type Message, type Producer } from 'kafkajs';
import { KeyHashPartitioner, createKafkaClient, ensureTopic, topicNumberSetting, withAdmin } from '@tickets/kafka';
import type { Logger } from '@tickets/logger';
import { tracedSend } from '@tickets/telemetry';
import type { OutboxRelayOptions } from './relay-options';

/**
 * The relay's side of Kafka: creates the topic if missing, learns its max.message.bytes, and sends
 * with one idempotent producer (acks=all) that is rebuilt only when asked (reset()).
 */
export class KafkaPublisher {
  private readonly kafka: Kafka;
  private producer?: Producer;
  private probeAdmin?: Admin;
  private topicReady = false;
  /** Bytes per send: the configured limit, lowered to 90 % of the topic's max.message.bytes when that is smaller. */
  maxBatchBytes: number;

  constructor(
    private readonly settings: OutboxRelayOptions['kafka'],
    private readonly configuredMaxBatchBytes: number,
    private readonly log: Logger,
  ) {
    this.maxBatchBytes = configuredMaxBatchBytes;
    this.kafka = createKafkaClient({
      brokers: settings.brokers,
      clientId: settings.clientId,
      logger: log,
      // Short client-level retries (connects, metadata): the relay's own backoff handles long outages.
      client: { retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 }, ...settings.client },
    });
  }

  /** Creates the topic if missing and connects the producer; throws while the broker is away (the caller backs off). */
  async prepare(): Promise<void> {
    if (!this.topicReady) await this.prepareTopic();
    await this.connectedProducer();
  }

  /** One producer.send of these messages to the topic, acks=all; with tracing on, a span per message in its ticket's trace. */
  async send(messages: Message[]): Promise<void> {
    const producer = await this.connectedProducer();
    await tracedSend(this.settings.topic, messages, () =>
      producer.send({ topic: this.settings.topic, acks: -1, messages }),
    );
  }

  /**
   * One metadata request for the topic, on an admin client kept for it (no client retries: one
   * attempt per call); throws when no broker answers. For the broker's state while idle (IdleBrokerProbe).
   */
  async probe(): Promise<void> {
    try {
      if (!this.probeAdmin) {
        this.probeAdmin = this.kafka.admin({ retry: { retries: 0 } });
        await this.probeAdmin.connect();
      }
      await this.probeAdmin.fetchTopicMetadata({ topics: [this.settings.topic] });
    } catch (err) {
      await this.dropProbe();
      throw err;
    }
  }

  /** Drops the producer; the next send builds a new one (a new producer id: the broker can no longer de-duplicate a resend). */
  async reset(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
    await this.dropProbe();
  }

  private async dropProbe(): Promise<void> {
    const admin = this.probeAdmin;
    this.probeAdmin = undefined;
    await admin?.disconnect().catch(() => undefined);
  }

  private async prepareTopic(): Promise<void> {
    const { topic, partitions, replicationFactor, minInsyncReplicas, retentionMs } = this.settings;
    await withAdmin(this.kafka, async (admin) => {
      if (await ensureTopic(admin, { topic, partitions, replicationFactor, minInsyncReplicas, retentionMs })) {
        this.log.info({ partitions, retentionMs, replicationFactor, minInsyncReplicas }, 'created topic');
      }
      const limit = await topicNumberSetting(admin, topic, 'max.message.bytes');
      if (limit !== undefined && limit > 0)
        this.maxBatchBytes = Math.min(this.configuredMaxBatchBytes, Math.floor(limit * 0.9));
    });
    this.topicReady = true;
  }

  private async connectedProducer(): Promise<Producer> {
    if (this.producer) return this.producer;
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // The Java client's murmur2 placement (kafkajs's DefaultPartitioner's, in cheaper arithmetic):
      // same key -> same partition as any other client.
      createPartitioner: KeyHashPartitioner,
      // Bounded client retries so the relay's own backoff (and stop()) stay in control. A failed send
      // is always retried with the very same messages on the same producer, so the broker still
      // de-duplicates by producer id and sequence (kafkajs warns about this setting; it is safe here).
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    try {
      await producer.connect();
    } catch (err) {
      // Broker away: drop this half-connected producer (and its sockets and timers); the next send builds a new one.
      await producer.disconnect().catch(() => undefined);
      throw err;
    }
    this.producer = producer;
    return producer;
  }
}
