// A rebuilt consumer whose join fails: the group coordinator answers its SyncGroup with NOT_COORDINATOR,
// as while the coordinator moves after a broker loss. Against the real broker, the membership tries again
// until it runs and consumes, and the failed join's member is taken out of the group at once, so the next
// joins do not wait a session timeout for it. The fault is injected through the client's own cluster
// factory (the hook the kit uses to see the member ids its joins obtain).
import { KafkaJSProtocolError, type Consumer, type ConsumerConfig } from 'kafkajs';
import { API_KEYS, clusterFactory, tapCoordinator } from '@tickets/event-consumer/coordinator-tap';
import { KafkaMembership } from '@tickets/event-consumer/kafka-membership';
import { eventually, kafkaFixture, testKafka, uniqueName } from '../support/events-factory';
import { TEST_KAFKA_BROKERS } from '../support/env';

jest.setTimeout(120_000);

/** A client whose next SyncGroup, once `armed`, fails with NOT_COORDINATOR; `failedMemberId` is the member that sent it. */
function faultyKafka() {
  const kafka = testKafka();
  const factory = clusterFactory(kafka)!;
  const fault = { armed: false, failedMemberId: undefined as string | undefined };
  (kafka as any)[factory.key] = (options: object) => {
    const cluster = factory.create(options);
    let joined: string | undefined;
    tapCoordinator(cluster, async (apiKey, send) => {
      if (apiKey === API_KEYS.JoinGroup) {
        const answer = (await send()) as { memberId: string };
        joined = answer.memberId;
        return answer;
      }
      if (apiKey === API_KEYS.SyncGroup && fault.armed) {
        fault.armed = false;
        fault.failedMemberId = joined;
        throw new KafkaJSProtocolError({
          type: 'NOT_COORDINATOR',
          code: 16,
          retriable: true,
          message: 'injected: NOT_COORDINATOR on SyncGroup',
        } as any);
      }
      return send();
    });
    return cluster;
  };
  return { kafka, fault };
}

/**
 * A membership of a new group on `topic` whose handler throws at the first batch (the consumer crashes
 * and is rebuilt) and arms the fault just before: the rebuild's first join fails at its SyncGroup.
 */
function crashingMembership(topic: string, consumer: Omit<Partial<ConsumerConfig>, 'groupId'>) {
  const { kafka, fault } = faultyKafka();
  const groupId = uniqueName('kit-rejoin-group');
  const consumed: string[] = [];
  const warnings: string[] = [];
  let crashes = 0;
  const note = (into: string[]) => (obj: unknown, msg?: string) => into.push(`${msg} ${JSON.stringify(obj)}`);
  const log = { debug: () => undefined, info: () => undefined, warn: note(warnings), error: () => undefined };
  const membership = new KafkaMembership(
    kafka,
    {
      groupId,
      topic,
      fromBeginning: true,
      reconnectMaxDelayMs: 200,
      brokers: { brokers: TEST_KAFKA_BROKERS, setting: 'KAFKA_BROKERS' },
      consumer: { heartbeatInterval: 1000, ...consumer },
    },
    {
      eachBatch: async ({ batch }) => {
        if (crashes++ === 0) {
          fault.armed = true;
          throw new TypeError('injected: the handler breaks');
        }
        consumed.push(...batch.messages.map((m) => String(m.value)));
      },
    },
    { ...log, child: () => log as never },
  );
  return { membership, fault, groupId, consumed, warnings };
}

describe('KafkaMembership: a join that fails at SyncGroup', () => {
  const topic = uniqueName('kit-rejoin');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 1);
  });

  afterAll(async () => {
    for (const clean of cleanups.reverse()) await clean().catch(() => undefined);
    await fx?.close();
  });

  const members = async (groupId: string) =>
    (await fx.admin.describeGroups([groupId])).groups[0].members.map((m) => m.memberId);

  it('is tried again: the membership runs and consumes a message produced afterwards', async () => {
    const m = crashingMembership(topic, { sessionTimeout: 10_000 });
    cleanups.push(
      () => m.membership.stop(),
      () => fx.admin.deleteGroups([m.groupId]),
    );
    await m.membership.start();
    expect(m.membership.status()).toEqual({ ready: true, state: 'running' });

    await fx.producer.send({ topic, messages: [{ value: 'first' }] });
    await eventually(
      () => m.fault.failedMemberId,
      (id) => id !== undefined,
      30_000,
      'the injected SyncGroup failure',
    );
    await eventually(
      () => m.membership.status(),
      (s) => s.ready,
      30_000,
      'the membership to run again',
    );
    await fx.producer.send({ topic, messages: [{ value: 'second' }] });
    await eventually(
      () => m.consumed,
      (c) => c.includes('second'),
      30_000,
      'the message produced afterwards',
    );
    expect(m.consumed).toEqual(['first', 'second']); // the crashed batch came again, uncommitted
    // The crash's cause is logged, though it did not change the state (the membership was rebuilding).
    expect(m.warnings.some((w) => /crashed/.test(w) && /injected: NOT_COORDINATOR on SyncGroup/.test(w))).toBe(true);
  });

  it("leaves the failed join's member at once: the group never waits its 60 s session for it", async () => {
    // Long enough that only the LeaveGroup explains a join within the 30 s bounds below.
    const session = { sessionTimeout: 60_000, rebalanceTimeout: 60_000 };
    const m = crashingMembership(topic, session);
    cleanups.push(
      () => m.membership.stop(),
      () => fx.admin.deleteGroups([m.groupId]),
    );
    await m.membership.start();
    await fx.producer.send({ topic, messages: [{ value: 'third' }] });
    const failedId = await eventually(
      () => m.fault.failedMemberId,
      (id) => id !== undefined,
      30_000,
    );
    await eventually(
      () => m.membership.status(),
      (s) => s.ready,
      30_000,
      'the membership to run again',
    );
    expect(await members(m.groupId)).not.toContain(failedId);

    // A second consumer of the group joins without waiting for the failed member either.
    const other: Consumer = testKafka().consumer({ groupId: m.groupId, ...session, heartbeatInterval: 1000 });
    cleanups.push(() => other.disconnect());
    let otherJoined = false;
    other.on(other.events.GROUP_JOIN, () => (otherJoined = true));
    await other.connect();
    await other.subscribe({ topic, fromBeginning: true });
    await other.run({ eachBatch: async () => undefined });
    await eventually(
      () => otherJoined,
      (j) => j,
      30_000,
      'the second consumer to join',
    );
    const now = await members(m.groupId);
    expect(now).toHaveLength(2);
    expect(now).not.toContain(failedId);
  });
});
