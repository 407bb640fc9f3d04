// A member taken out of its group on its behalf (what the kit does for a crashed consumer before the
// rebuilt one joins): against the real broker, the member is gone from the group at once, and a second
// leave for it says it is unknown.
import type { Consumer } from 'kafkajs';
import { leaveAsStaleMember } from '@tickets/event-consumer/admin';
import { eventually, kafkaFixture, testKafka, uniqueName } from '../support/events-factory';

jest.setTimeout(120_000);

describe('leaveAsStaleMember', () => {
  const topic = uniqueName('kit-stale-member');
  const groupId = uniqueName('kit-stale-member-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let consumer: Consumer | undefined;

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 1);
  });

  afterAll(async () => {
    await consumer?.disconnect().catch(() => undefined);
    await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
    await fx?.close();
  });

  it('removes a live member from the group, then answers unknown for it', async () => {
    const kafka = testKafka();
    // A member that stays silent: heartbeats far apart, so only the LeaveGroup can remove it within the test.
    consumer = kafka.consumer({ groupId, sessionTimeout: 60_000, heartbeatInterval: 20_000, maxWaitTimeInMs: 100 });
    let memberId: string | undefined;
    consumer.on(consumer.events.GROUP_JOIN, (e) => (memberId = e.payload.memberId));
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async () => undefined });
    await eventually(
      () => memberId,
      (id) => id !== undefined,
      60_000,
    );
    const members = async () => (await fx.admin.describeGroups([groupId])).groups[0].members.map((m) => m.memberId);
    expect(await members()).toEqual([memberId]);

    await expect(leaveAsStaleMember(kafka, groupId, memberId!)).resolves.toBe('left');
    expect(await members()).not.toContain(memberId);
    await expect(leaveAsStaleMember(kafka, groupId, memberId!)).resolves.toBe('unknown');
  });
});
