// kafkajs 2.2.4's request queue re-arms a timer of `throttledUntil - Date.now()` ms after every check: a
// negative delay, run after 1 ms, so an idle connection wakes its process ~900 times a second
// (tulios/kafkajs#1704), and Node 24 reports the first on stderr as a TimeoutNegativeWarning (#1751).
// Plain node processes (no Jest, no flags) against the real broker: with the kit's patch (installed by the
// compiled @tickets/kafka client, or called by a service for its own client) an idle connection is not
// re-checked and no warning is printed; kafkajs alone does both; a negative timeout of the process's
// own code is still reported. Node before 24 prints no TimeoutNegativeWarning at all.
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

it("a service's own kafkajs client prints none after patchKafkajsRequestQueue() of @tickets/event-consumer/admin", async () => {
  const { stdout, stderr } = await runNode(
    `require('@tickets/event-consumer/admin').patchKafkajsRequestQueue();
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
it("the process's own negative timeout is still reported with the patch installed (on Node 24 and later)", async () => {
  const { stdout, stderr } = await runNode(
    `const { createKafkaClient } = require('@tickets/kafka');
     const kafka = createKafkaClient({ brokers: process.env.KAFKA_BROKERS.split(','), clientId: 'warnings-own-timeout' });
     setTimeout(() => {}, -5);` + roundTrip('kafka'),
  );
  expect(stdout).toContain('metadata fetched');
  expect(stderr.includes(`${WARNING}: -5 is a negative number.`)).toBe(NODE_WARNS);
});

/** Connects an admin, then counts the request queues' checks during one idle second; prints `checks <n>`. */
const idleChecks = (setup: string, kafka: string) => `
  ${setup}
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js');
  let checks = 0;
  const check = RequestQueue.prototype.checkPendingRequests;
  RequestQueue.prototype.checkPendingRequests = function () { checks++; return check.call(this); };
  const brokers = process.env.KAFKA_BROKERS.split(',');
  (async () => {
    const admin = ${kafka}.admin();
    await admin.connect();
    await admin.fetchTopicMetadata();
    checks = 0;
    await new Promise((r) => setTimeout(r, 1000));
    console.log('checks ' + checks);
    await admin.disconnect();
  })().catch((err) => { console.error(err); process.exit(1); });
`;
const checksOf = (stdout: string) => Number(/checks (\d+)/.exec(stdout)?.[1]);

// Counts, not durations: kafkajs alone re-checks each idle connection about every millisecond.
it('an idle connection of a @tickets/kafka client is not re-checked; of kafkajs alone, hundreds of times a second', async () => {
  const patched = await runNode(
    idleChecks(
      `const { createKafkaClient } = require('@tickets/kafka');`,
      `createKafkaClient({ brokers, clientId: 'idle-kafka-client' })`,
    ),
  );
  const stock = await runNode(
    idleChecks(
      `const { Kafka, logLevel } = require('kafkajs');`,
      `new Kafka({ brokers, clientId: 'idle-plain-kafkajs', logLevel: logLevel.NOTHING })`,
    ),
  );
  expect(checksOf(patched.stdout)).toBeLessThan(20);
  expect(checksOf(stock.stdout)).toBeGreaterThan(200);
});
