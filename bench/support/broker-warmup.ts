// Traffic for a broker JVM that started shortly before a bench, so that the bench measures the
// processes it starts rather than the broker's own warm-up.
//
// A fresh JVM interprets Kafka's produce, fetch and offset-commit paths and compiles them under the
// first minutes of load. On 2026-12-04 (commit caed1e5, the latency bench at 300 req/s, a broker
// started by `npm run kafka:up` just before): the first open loop's p99 was 114.3 ms with the broker
// at 49 % of a core, then 51.7 and 50.0 ms (32 and 22 %); against a broker that had served two earlier
// runs, 31.9, 32.6 and 25.4 ms with the broker at 12-16 % (docs/benchmarks.md, "The first loop is the
// broker's"). A deployment's broker has been up for days; a deploy restarts our processes, not it.
// So the warm-up touches the broker only: a raw kafkajs producer and consumer group on a topic of its
// own (deleted after), nothing of the API, the relay, the consumer or the database.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Kafka } from 'kafkajs';
import { cpuSecondsOf } from './api-process';
import { int } from './stats';

export interface BrokerWarmup {
  seconds: number;
  sends: number;
  fetched: number;
  /** The broker's CPU per send (µs) in each 5 s window of the warm-up, when its pid is known. */
  brokerCpuUsPerSend: number[];
}

/**
 * Produces small idempotent `acks=all` sends (1-4 records of ~1 kB: the shape of the relay's sends at
 * a few hundred creates/s, as fast as 8 send loops go) to a fresh topic while a consumer group reads
 * them with `eachBatch` and commits, for `seconds`; logs the broker's CPU per send (its fetches and
 * commits included) every 5 s.
 */
export async function warmBroker(o: {
  kafka: Kafka;
  seconds: number;
  partitions: number;
  brokerPid?: number;
  log: (line: string) => void;
}): Promise<BrokerWarmup> {
  const id = randomBytes(4).toString('hex');
  const topic = `bench-broker-warmup-${id}`;
  const groupId = `bench-broker-warmup-${id}`;
  const admin = o.kafka.admin();
  const producer = o.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const consumer = o.kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  const value = randomBytes(512).toString('hex');
  let sends = 0;
  let fetched = 0;
  const brokerCpuUsPerSend: number[] = [];
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: o.partitions }] });
    await producer.connect();
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatchAutoResolve: false,
      autoCommit: false,
      // As the consumer kit does: resolve the batch, then commit its offset.
      eachBatch: async ({ batch, resolveOffset }) => {
        fetched += batch.messages.length;
        resolveOffset(batch.lastOffset());
        await consumer.commitOffsets([
          { topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() },
        ]);
      },
    });
    const end = performance.now() + o.seconds * 1000;
    let n = 0;
    const loop = async () => {
      while (performance.now() < end) {
        const records = 1 + (n++ % 4);
        await producer.send({
          topic,
          acks: -1,
          messages: Array.from({ length: records }, (_, i) => ({ key: `k${(n + i) % 64}`, value })),
        });
        sends++;
      }
    };
    // Every 5 s: the broker's CPU per send, which falls as its JVM compiles the paths the load runs.
    const sampler = (async () => {
      let cpu0 = o.brokerPid ? cpuSecondsOf(o.brokerPid) : 0;
      let sends0 = 0;
      while (end - performance.now() > 250) {
        await new Promise((r) => setTimeout(r, Math.min(5000, end - performance.now())));
        const elapsed = Math.round((o.seconds * 1000 - Math.max(0, end - performance.now())) / 1000);
        let share = '';
        if (o.brokerPid && sends > sends0) {
          const cpu = cpuSecondsOf(o.brokerPid);
          const us = ((cpu - cpu0) / (sends - sends0)) * 1e6;
          brokerCpuUsPerSend.push(us);
          share = `, the broker's CPU ${int(us)} µs per send`;
          cpu0 = cpu;
        }
        sends0 = sends;
        o.log(
          `  broker warm-up ${elapsed}/${o.seconds} s: ${int(sends)} sends, ${int(fetched)} records fetched${share}`,
        );
      }
    })();
    await Promise.all([...Array.from({ length: 8 }, loop), sampler]);
    return { seconds: o.seconds, sends, fetched, brokerCpuUsPerSend };
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await admin.deleteTopics({ topics: [topic] }).catch((e: Error) => o.log(`could not delete ${topic}: ${e.message}`));
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}
