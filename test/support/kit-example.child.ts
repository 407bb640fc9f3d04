// The kit example as its own OS process (spawned by test/integration/event-consumer-crash.int-spec.ts).
// With KILL_AFTER_TX=1 it reports the first committed transaction on stdout and then stops still, before
// its offset commit, so that the test can SIGKILL it exactly there.
import { startExample } from './kit-example';

void (async () => {
  const killPoint = process.env.KILL_AFTER_TX === '1';
  await startExample({
    groupId: process.env.GROUP_ID!,
    topic: process.env.TOPIC!,
    kafka: { brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'kit-child', sessionTimeoutMs: 10_000 },
    databaseUrl: process.env.DATABASE_URL!,
    chunkSize: 100,
    partitionsConcurrency: 1,
    maxAttempts: 3,
    retryBaseMs: 20,
    retryMaxDelayMs: 100,
    inbox: { retentionMs: 30 * 86_400_000, purgeIntervalMs: 3_600_000 },
    faults: killPoint
      ? {
          afterTransactionBeforeCommit: async ({ partition, lastOffset }) => {
            process.stdout.write(`TX_COMMITTED ${partition} ${lastOffset}\n`);
            await new Promise(() => undefined); // wait here for the SIGKILL
          },
        }
      : undefined,
  });
  process.stdout.write('READY\n');
})().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
