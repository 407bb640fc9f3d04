export { createKafkaClient } from './kafka-client';
export { KeyHashPartitioner } from '@tickets/event-consumer/kafkajs-produce-encoding';
export type { KafkaClientOptions } from './kafka-client';
export { kafkaLogCreator } from './kafka-log';
export { kafkaErrorType } from './kafka-errors';
export { ensureTopic, waitForTopic, topicNumberSetting, withAdmin } from './topic';
export type { TopicSpec } from './topic';
