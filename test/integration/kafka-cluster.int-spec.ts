// A real three-node KRaft cluster (scripts/kafka/kafka.sh --brokers 3 on ports of its own, beside the
// default broker): a topic with replication factor 3 and min.insync.replicas 2 keeps taking acks=all
// writes from an idempotent producer while the broker leading most of its partitions is SIGKILLed,
// and leadership moves to the survivors.
import { join } from 'node:path';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import {
  KafkaCluster,
  ROOT,
  busiestLeader,
  formatLeaders,
  partitionLeaders,
  type Leaders,
} from '../../scripts/chaos/kafka-cluster';

jest.setTimeout(300_000);

const PORT = Number(process.env.TEST_KAFKA_CLUSTER_PORT ?? 29292);
const TOPIC = `cluster-it-${process.pid}`;
const cluster = new KafkaCluster({ brokers: 3, port: PORT, dir: join(ROOT, '.tmp', `kafka-cluster-it-${PORT}`) });
let admin: Admin;
let producer: Producer;

beforeAll(async () => {
  await cluster.up();
  admin = cluster.admin('cluster-it-admin');
  await admin.connect();
});

afterAll(async () => {
  await producer?.disconnect().catch(() => undefined);
  await admin?.disconnect().catch(() => undefined);
  await cluster.down();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined>, boundMs = 60_000): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(250);
  }
}

it('moves leadership off a SIGKILLed broker while an acks=all idempotent producer keeps writing', async () => {
  await admin.createTopics({
    topics: [
      {
        topic: TOPIC,
        numPartitions: 6,
        replicationFactor: 3,
        configEntries: [{ name: 'min.insync.replicas', value: '2' }],
      },
    ],
    waitForLeaders: false,
  });
  // A new topic reaches each broker's metadata cache a little later than the controller's answer.
  await until('leaders for all six partitions', async () => {
    const l = await partitionLeaders(admin, TOPIC);
    return Object.keys(l).length === 6 && Object.values(l).every((id) => id >= 0) ? l : undefined;
  });
  // Any broker may answer the next metadata request, and its cache may not hold the topic yet: ask until one does.
  const meta = await until('the topic in the metadata of the broker asked', async () => {
    const m = await admin.fetchTopicMetadata({ topics: [TOPIC] });
    return m.topics[0]?.partitions.length === 6 ? m : undefined;
  });
  for (const p of meta.topics[0].partitions) expect(p.replicas).toHaveLength(3);
  const configs = await until('the topic config from the broker asked', () =>
    admin.describeConfigs({
      resources: [{ type: 2, name: TOPIC, configNames: ['min.insync.replicas'] }],
      includeSynonyms: false,
    }),
  );
  expect(configs.resources[0].configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue).toBe('2');

  const kafka = new Kafka({
    clientId: 'cluster-it',
    brokers: cluster.bootstrap,
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 2_000 },
  });
  producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  // One value per send, keyed so it spreads over the partitions; a value whose send threw is sent
  // again and may then legitimately appear twice (at-least-once), so only first-try acks count as "once".
  const acked: number[] = [];
  const resent = new Set<number>();
  let stop = false;
  let next = 0;
  const writer = (async () => {
    while (!stop) {
      const n = next;
      try {
        await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: `k${n % 24}`, value: String(n) }] });
        acked.push(n);
        next++;
      } catch {
        resent.add(n);
        await sleep(100);
      }
    }
  })();

  await until('20 acked writes', async () => (acked.length >= 20 ? true : undefined));
  const before: Leaders = await partitionLeaders(admin, TOPIC);
  const victim = busiestLeader(before);
  const ackedAtKill = acked.length;
  expect(cluster.kill(victim)).toBeDefined();
  process.stdout.write(`leaders before: ${formatLeaders(before)}; SIGKILL broker ${victim}\n`);

  const after = await until('leadership to leave the killed broker', async () => {
    const l = await partitionLeaders(admin, TOPIC);
    return Object.values(l).every((id) => id !== victim && id >= 0) ? l : undefined;
  });
  process.stdout.write(`leaders after:  ${formatLeaders(after)}\n`);
  await until('20 more acked writes with a broker down', async () =>
    acked.length >= ackedAtKill + 20 ? true : undefined,
  );
  stop = true;
  await writer;

  const partitionsLedByVictim = Object.entries(before)
    .filter(([, l]) => l === victim)
    .map(([p]) => Number(p));
  expect(partitionsLedByVictim.length).toBeGreaterThan(0);
  for (const p of partitionsLedByVictim) expect(after[p]).not.toBe(victim);

  // Everything acked is in the topic, read back from the two survivors.
  const consumer = kafka.consumer({ groupId: `cluster-it-${process.pid}`, maxWaitTimeInMs: 500 });
  const seen = new Map<number, number>();
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) =>
      void seen.set(Number(message.value), (seen.get(Number(message.value)) ?? 0) + 1),
  });
  await until(
    'every acked value to be read back',
    async () => (acked.every((n) => seen.has(n)) ? true : undefined),
    90_000,
  );
  await consumer.disconnect();

  const twice = acked.filter((n) => !resent.has(n) && (seen.get(n) ?? 0) > 1);
  process.stdout.write(
    `acked ${acked.length} (${acked.length - ackedAtKill} after the kill), sends retried by the test ${resent.size}\n`,
  );
  expect(twice).toEqual([]);
});
