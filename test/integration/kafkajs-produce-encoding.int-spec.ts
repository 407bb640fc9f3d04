// The kit's produce-path patch (patchKafkajsProduceEncoding: an uncompressed Produce request in one pass
// into one buffer, the record batch's CRC-32C eight bytes a step, each record of a compressed batch in one
// buffer) and the relay's KeyHashPartitioner, against the real broker, across
// a switch: plain node processes send the same keys' events in turn, kafkajs as it is with its
// DefaultPartitioner, then patched with KeyHashPartitioner, then as it is again. The broker checks each
// batch's CRC (a wrong one is refused as CORRUPT_MESSAGE), and every key's events must come back from
// the partition DefaultPartitioner places that key on, in the order they were sent, byte for byte.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Kafka, Partitioners, logLevel, type PartitionMetadata } from 'kafkajs';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { trackChild } from '../support/children';
import { eventually } from '../support/events-factory';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const PARTITIONS = 6;
const KEYS = Array.from({ length: 40 }, () => randomUUID());
const ROUND = 25; // events per key per process
const topic = `produce-encoding-${randomUUID()}`;
const kafka = new Kafka({ brokers: TEST_KAFKA_BROKERS, clientId: 'produce-encoding-test', logLevel: logLevel.NOTHING });

/** A plain node process that sends events `from`..`from + ROUND - 1` of every key, 50 records a send. */
const sender = (patched: boolean, from: number) => `
  const encoding = require('@tickets/event-consumer/kafkajs-produce-encoding');
  const patch = ${patched} ? encoding.patchKafkajsProduceEncoding() : null;
  const { Kafka, Partitioners, logLevel } = require('kafkajs');
  const keys = ${JSON.stringify(KEYS)};
  (async () => {
    const producer = new Kafka({ brokers: process.env.KAFKA_BROKERS.split(','), clientId: 'produce-encoding', logLevel: logLevel.NOTHING })
      .producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false,
        createPartitioner: ${patched} ? encoding.KeyHashPartitioner : Partitioners.DefaultPartitioner });
    await producer.connect();
    const messages = [];
    for (let n = ${from}; n < ${from + ROUND}; n++)
      for (const key of keys)
        messages.push({ key, value: JSON.stringify({ key, n, text: 'é漢🎫'.repeat(n * 20) }),
          headers: { 'event-id': key + ':' + n, 'event-type': 'ticket.created', empty: '' } });
    for (let i = 0; i < messages.length; i += 50)
      await producer.send({ topic: ${JSON.stringify(topic)}, acks: -1, messages: messages.slice(i, i + 50) });
    await producer.disconnect();
    // What kafkajs's record batch and produce request modules took when they loaded (at the first send).
    const mark = Symbol.for('@tickets/event-consumer.kafkajs-produce-encoding');
    const took = (m) => require.cache[require.resolve('kafkajs/src/protocol/' + m)].exports[mark] === true;
    console.log(JSON.stringify({ patch, inUse: { crc32c: took('recordBatch/crc32C/index.js'),
      record: took('recordBatch/record/v0/index.js'), request: took('requests/produce/v3/request.js') } }));
  })().catch((err) => { console.error(err); process.exit(1); });
`;

function runNode(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','), NODE_OPTIONS: '' };
    trackChild(
      execFile(process.execPath, ['-e', script], { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
      ),
    );
  });
}

beforeAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: PARTITIONS }] });
  await admin.disconnect();
});

afterAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
});

it('keeps every key on its partition and in order across a switch to and from the patched encoding', async () => {
  const plain = JSON.parse(await runNode(sender(false, 0)));
  expect(plain).toEqual({ patch: null, inUse: { crc32c: false, record: false, request: false } });
  const patched = JSON.parse(await runNode(sender(true, ROUND)));
  expect(patched).toEqual({
    patch: { crc32c: true, record: true, request: true },
    inUse: { crc32c: true, record: true, request: true },
  });
  await runNode(sender(false, 2 * ROUND));

  const got = new Map<string, { partition: number; n: number; value: string; headers: string }[]>();
  let count = 0;
  const consumer = kafka.consumer({ groupId: `produce-encoding-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const key = message.key!.toString();
      const value = message.value!.toString();
      const headers = Object.entries(message.headers ?? {})
        .map(([k, v]) => `${k}=${String(v)}`)
        .join('&');
      const list = got.get(key) ?? [];
      list.push({ partition, n: (JSON.parse(value) as { n: number }).n, value, headers });
      got.set(key, list);
      count++;
    },
  });
  try {
    await eventually(
      () => count,
      (n) => n >= KEYS.length * 3 * ROUND,
      60_000,
      'every event back',
    );
  } finally {
    await consumer.disconnect();
  }

  const placement = Partitioners.DefaultPartitioner();
  const metadata: PartitionMetadata[] = Array.from({ length: PARTITIONS }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    partitionErrorCode: 0,
  }));
  const used = new Set<number>();
  for (const key of KEYS) {
    const events = got.get(key)!;
    const partition = placement({ topic, partitionMetadata: metadata, message: { key, value: null } });
    used.add(partition);
    expect(events.map((e) => e.partition)).toEqual(events.map(() => partition));
    expect(events.map((e) => e.n)).toEqual(Array.from({ length: 3 * ROUND }, (_, n) => n));
    for (const e of events) {
      expect(e.value).toBe(JSON.stringify({ key, n: e.n, text: 'é漢🎫'.repeat(e.n * 20) }));
      expect(e.headers).toBe(`event-id=${key}:${e.n}&event-type=ticket.created&empty=`);
    }
  }
  expect(used.size).toBeGreaterThan(1);
});
