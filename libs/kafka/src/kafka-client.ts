import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { patchKafkajsProduceEncoding } from '@tickets/event-consumer/kafkajs-produce-encoding';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';
import type { Logger } from '@tickets/logger';
import { kafkaLogCreator } from './kafka-log';

export interface KafkaClientOptions {
  brokers: string[];
  clientId: string;
  /** kafkajs's log goes here (see kafkaLogCreator); without a logger the client logs nothing. */
  logger?: Logger;
  /** Extra kafkajs client settings (ssl, sasl, timeouts, retry, socketFactory ...). */
  client?: Omit<KafkaConfig, 'brokers' | 'clientId' | 'logCreator' | 'logLevel'>;
}

/**
 * The kafkajs client of the relay and the consumer (no connection is opened until a producer, consumer or admin connects).
 * kafkajs's request queues get patchKafkajsRequestQueue (no 1 ms timer per idle connection, no TimeoutNegativeWarning),
 * and its produce path patchKafkajsProduceEncoding (the same bytes for about half the CPU per record).
 */
export function createKafkaClient(opts: KafkaClientOptions): Kafka {
  patchKafkajsRequestQueue();
  patchKafkajsProduceEncoding();
  return new Kafka({
    ...opts.client,
    brokers: opts.brokers,
    clientId: opts.clientId,
    logLevel: opts.logger ? logLevel.WARN : logLevel.NOTHING,
    ...(opts.logger ? { logCreator: kafkaLogCreator(opts.logger) } : {}),
  });
}
