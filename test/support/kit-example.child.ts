// The kit example as its own OS process (spawned by test/integration/event-consumer-crash.int-spec.ts).
// With KILL_AFTER_TX=1 it reports the first committed transaction on stdout and then stops still, before
// its offset commit, so that the test can SIGKILL it exactly there.
import { withFaults } from '@tickets/event-consumer/testing';
import { startExample } from './kit-example';

void (async () => {
  const killPoint = process.env.KILL_AFTER_TX === '1';
  const options = {
    groupId: process.env.GROUP_ID!,
    topic: process.env.TOPIC!,
    brokers: process.env.KAFKA_BROKERS!.split(','),
    databaseUrl: process.env.DATABASE_URL!,
    kafka: { clientId: 'kit-child' },
    chunkSize: 100,
    partitionsConcurrency: 1,
    maxAttempts: 3,
    retryBaseMs: 20,
    retryMaxDelayMs: 100,
    metrics: false as const,
  };
  await startExample(
    withFaults(
      options,
      killPoint
        ? {
            afterTransactionBeforeCommit: async ({ partition, lastOffset }) => {
              process.stdout.write(`TX_COMMITTED ${partition} ${lastOffset}\n`);
              await new Promise(() => undefined); // wait here for the SIGKILL
            },
          }
        : undefined,
    ),
  );
  process.stdout.write('READY\n');
})().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
