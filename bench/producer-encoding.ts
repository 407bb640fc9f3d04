// What the relay's producer costs per record with the kit's produce-path patch and KeyHashPartitioner
// (patchKafkajsProduceEncoding, @tickets/event-consumer/kafkajs-produce-encoding) against kafkajs as it
// is with its DefaultPartitioner, in the same run: each round runs one plain node process of each, in
// alternating order, against the broker. A process sends PRODUCER_BENCH_RECORDS relay-like records
// (a ~1.3 KB ticket.created envelope keyed by ticket id, event-id / event-type / traceparent headers,
// idempotent, acks=all) in sends of PRODUCER_BENCH_BATCH to a fresh 6-partition topic, after a
// warm-up of a tenth of that, and reports its CPU time (user + system, process.cpuUsage) per record:
// encoding, partitioning, the socket writes and the replies. Both have patchKafkajsRequestQueue, as
// the relay's client does.
//
//   npm run bench:producer      (build, then node dist/bench/producer-encoding.js)
//
// Env: PRODUCER_BENCH_RECORDS (20000), PRODUCER_BENCH_BATCH (50, the relay's rows per send at 1,000
// creates/s), PRODUCER_BENCH_ROUNDS (4), KAFKA_BROKERS (127.0.0.1:9092).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { Kafka, Partitioners, logLevel, type Message } from 'kafkajs';
import { KeyHashPartitioner, patchKafkajsProduceEncoding } from '@tickets/event-consumer/kafkajs-produce-encoding';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';
import { benchTicketCreated } from './support/ticket-event';
import { fixed, median } from './support/stats';
import { positiveNumberEnv as num, repoRoot } from './support/paths';

const RECORDS = num('PRODUCER_BENCH_RECORDS', 20_000);
const BATCH = num('PRODUCER_BENCH_BATCH', 50);
const ROUNDS = num('PRODUCER_BENCH_ROUNDS', 4);
const BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');

type Variant = 'patched' | 'kafkajs';

/** The child: sends the records and prints its CPU µs per record. */
async function child(variant: Variant, topic: string): Promise<void> {
  patchKafkajsRequestQueue(); // both: the relay's client has it (no 1 ms timer per connection)
  if (variant === 'patched') {
    const patch = patchKafkajsProduceEncoding();
    if (!patch.crc32c || !patch.record || !patch.request)
      throw new Error(`the patch did not apply: ${JSON.stringify(patch)}`);
  }
  const producer = new Kafka({
    brokers: BROKERS,
    clientId: `producer-bench-${variant}`,
    logLevel: logLevel.NOTHING,
  }).producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: variant === 'patched' ? KeyHashPartitioner : Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const tenantId = randomUUID();
  const message = (): Message => {
    const event = benchTicketCreated(tenantId);
    return {
      key: event.ticketId,
      value: JSON.stringify(event),
      timestamp: String(Date.now()),
      headers: {
        'event-id': event.id,
        'event-type': event.type,
        traceparent: `00-${randomUUID().replace(/-/g, '')}-${randomUUID().replace(/-/g, '').slice(0, 16)}-01`,
      },
    };
  };
  const send = async (count: number) => {
    // Built before the clock starts: the relay's messages come from its claim, not from this loop.
    const batches: Message[][] = [];
    for (let i = 0; i < count; i += BATCH) batches.push(Array.from({ length: Math.min(BATCH, count - i) }, message));
    const start = process.cpuUsage();
    for (const messages of batches) await producer.send({ topic, acks: -1, messages });
    const used = process.cpuUsage(start);
    return (used.user + used.system) / count;
  };
  await send(Math.ceil(RECORDS / 10));
  const usPerRecord = await send(RECORDS);
  await producer.disconnect();
  process.stdout.write(`${JSON.stringify({ usPerRecord })}\n`);
}

function runChild(variant: Variant, topic: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [__filename, 'child', variant, topic],
      { cwd: repoRoot(), env: process.env, timeout: 300_000 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`${variant} child failed: ${err.message}\n${stderr}`))
          : resolve((JSON.parse(stdout.trim().split('\n').pop()!) as { usPerRecord: number }).usPerRecord),
    );
  });
}

async function main(): Promise<void> {
  patchKafkajsRequestQueue();
  const topic = `producer-bench-${randomUUID()}`;
  const admin = new Kafka({ brokers: BROKERS, clientId: 'producer-bench-admin', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 6 }] });
  const results: Record<Variant, number[]> = { patched: [], kafkajs: [] };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const order: Variant[] = round % 2 ? ['kafkajs', 'patched'] : ['patched', 'kafkajs'];
      for (const variant of order) {
        const us = await runChild(variant, topic);
        results[variant].push(us);
        console.error(`round ${round}/${ROUNDS} ${variant.padEnd(7)} ${fixed(us, 2)} µs CPU per record`);
      }
    }
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  }
  const range = (xs: number[]) => `${fixed(median(xs), 2)} (${fixed(Math.min(...xs), 2)}-${fixed(Math.max(...xs), 2)})`;
  const ratios = results.patched.map((p, i) => p / results.kafkajs[i]);
  console.log(`\n## bench:producer — ${new Date().toISOString()}\n`);
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${RECORDS} records of ~1.3 KB per process in sends of ${BATCH}, ${ROUNDS} rounds alternating.\n`,
  );
  console.log('| producer | CPU µs per record, median (range) |\n|---|---|');
  console.log(`| kafkajs 2.2.4, DefaultPartitioner | ${range(results.kafkajs)} |`);
  console.log(`| patched, KeyHashPartitioner | ${range(results.patched)} |`);
  console.log(`| patched / kafkajs, per round | ${range(ratios)}x |`);
}

if (process.argv[2] === 'child') {
  child(process.argv[3] as Variant, process.argv[4]).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
