// kafkajs 2.2.4 hands setTimeout a negative delay at its first broker response (tulios/kafkajs#1751),
// which Node 24 reports on stderr as a TimeoutNegativeWarning. Plain node processes (no Jest, no
// flags) against the real broker: the compiled @tickets/kafka client and the kit's exported filter keep
// that warning off stderr, kafkajs alone prints it, and a negative timeout of the process's own code
// is still reported. Node before 24 prints no TimeoutNegativeWarning at all; Node 24 prints the first
// of a process only.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { trackChild } from '../support/children';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const NODE_WARNS = Number(process.versions.node.split('.')[0]) >= 24;
const WARNING = 'TimeoutNegativeWarning';

/** One admin round trip to the broker (connect, topic metadata, disconnect) on `kafka`, then `after`. */
const roundTrip = (kafka: string, after = '') => `
  const brokers = process.env.KAFKA_BROKERS.split(',');
  (async () => {
    const admin = ${kafka}.admin();
    await admin.connect();
    await admin.fetchTopicMetadata();
    await admin.disconnect();
    ${after}
    console.log('metadata fetched');
  })().catch((err) => { console.error(err); process.exit(1); });
`;

/** Runs `script` in a plain node process (the test's Node.js, none of Jest's flags) from the repository root. */
function runNode(script: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','), NODE_OPTIONS: '' };
    delete env.NODE_NO_WARNINGS;
    trackChild(
      execFile(process.execPath, ['-e', script], { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ stdout, stderr }),
      ),
    );
  });
}

it('a client of @tickets/kafka prints no TimeoutNegativeWarning', async () => {
  const { stdout, stderr } = await runNode(
    `const { createKafkaClient } = require('@tickets/kafka');` +
      roundTrip(`createKafkaClient({ brokers, clientId: 'warnings-kafka-client' })`),
  );
  expect(stdout).toContain('metadata fetched');
  expect(stderr).not.toContain(WARNING);
});

it("a service's own kafkajs client prints none after filterKafkajsTimeoutWarning() of @tickets/event-consumer/admin", async () => {
  const { stdout, stderr } = await runNode(
    `require('@tickets/event-consumer/admin').filterKafkajsTimeoutWarning();
     const { Kafka, logLevel } = require('kafkajs');` +
      roundTrip(`new Kafka({ brokers, clientId: 'warnings-own-client', logLevel: logLevel.NOTHING })`),
  );
  expect(stdout).toContain('metadata fetched');
  expect(stderr).not.toContain(WARNING);
});

it('kafkajs alone prints the TimeoutNegativeWarning (on Node 24 and later)', async () => {
  const { stdout, stderr } = await runNode(
    `const { Kafka, logLevel } = require('kafkajs');` +
      roundTrip(`new Kafka({ brokers, clientId: 'warnings-plain-kafkajs', logLevel: logLevel.NOTHING })`),
  );
  expect(stdout).toContain('metadata fetched');
  expect(stderr.includes(`${WARNING}: -`)).toBe(NODE_WARNS);
});

// Node reports a negative timeout once per process: the process's own comes before kafkajs's first response.
it("the process's own negative timeout is still reported with the filter installed (on Node 24 and later)", async () => {
  const { stdout, stderr } = await runNode(
    `const { createKafkaClient } = require('@tickets/kafka');
     const kafka = createKafkaClient({ brokers: process.env.KAFKA_BROKERS.split(','), clientId: 'warnings-own-timeout' });
     setTimeout(() => {}, -5);` + roundTrip('kafka'),
  );
  expect(stdout).toContain('metadata fetched');
  expect(stderr.includes(`${WARNING}: -5 is a negative number.`)).toBe(NODE_WARNS);
});
