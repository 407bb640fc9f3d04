import { EventEmitter } from 'node:events';
import type { Kafka } from 'kafkajs';
import { KafkaMembership, brokerUnreachable, fullJitterMs } from './kafka-membership';

describe('fullJitterMs', () => {
  it('is uniform below min(cap, base · 2^(n-1))', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((n) => fullJitterMs(n, 5000, 200, () => 1))).toEqual([
      200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
    expect(fullJitterMs(4, 5000, 200, () => 0)).toBe(0);
    expect(fullJitterMs(4, 5000, 200, () => 0.5)).toBe(800);
  });
});

/** What kafkajs throws when no broker answers: retries exhausted, the connection error inside. */
const refused = () =>
  Object.assign(new Error('Connection error: connect ECONNREFUSED'), {
    name: 'KafkaJSNumberOfRetriesExceeded',
    originalError: Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' }),
  });

describe('brokerUnreachable', () => {
  it('finds a connection error in the cause chain, and nothing else', () => {
    expect(brokerUnreachable(refused())).toBe(true);
    expect(brokerUnreachable(new Error('topic t keeps messages for ever but INBOX_RETENTION is 30 d'))).toBe(false);
    expect(
      brokerUnreachable(
        Object.assign(new Error('x'), { name: 'KafkaJSNumberOfRetriesExceeded', originalError: new Error('SASL') }),
      ),
    ).toBe(false);
  });
});

/** What the coordinator answers to a SyncGroup while it moves (retriable), or to a group the client may not join. */
const protocolError = (type: string, retriable: boolean) =>
  Object.assign(new Error(`injected ${type}`), { name: 'KafkaJSProtocolError', type, retriable });

interface World {
  brokerDown: boolean;
  /** The next joins crash with these (kafkajs's run() resolves all the same, after the CRASH event). */
  joinCrashes: Error[];
}

/** A kafkajs consumer double: connect fails while `brokerDown`, a join crashes as `joinCrashes` says, CRASH is emitted by the test. */
class FakeConsumer extends EventEmitter {
  readonly events = { GROUP_JOIN: 'group_join', CRASH: 'crash' };
  connected = false;
  runs = 0;
  constructor(
    private readonly world: World,
    readonly config: { retry?: { restartOnFailure?: (e: Error) => Promise<boolean> } },
    private readonly memberId: string,
  ) {
    super();
  }
  override on(event: string, listener: (...args: unknown[]) => void): this {
    return super.on(event, listener);
  }
  async connect() {
    if (this.world.brokerDown) throw refused();
    this.connected = true;
  }
  async subscribe() {}
  async run() {
    this.runs++;
    const crash = this.world.joinCrashes.shift();
    if (crash) this.emit('crash', { payload: { error: crash, restart: false } });
    else this.emit('group_join', { payload: { memberId: this.memberId } });
  }
  async disconnect() {
    this.connected = false;
  }
  crash(restart: boolean) {
    this.emit('crash', { payload: { error: new Error('Failed to find group coordinator'), restart } });
  }
}

function setup(leaveStaleMember: (memberId: string) => Promise<unknown> = async () => 'left', remindEveryMs?: number) {
  const world: World = { brokerDown: false, joinCrashes: [] };
  const made: FakeConsumer[] = [];
  const kafka = {
    consumer: (config: FakeConsumer['config']) =>
      made[made.push(new FakeConsumer(world, config, `member-${made.length}`)) - 1],
  } as unknown as Kafka;
  const lines: string[] = [];
  const fields: unknown[] = [];
  const push = (o: unknown, m: string) => fields.push(o) && lines.push(m);
  const log = { info: push, warn: push, error: push };
  let rebuilt = 0;
  const m = new KafkaMembership(
    kafka,
    {
      groupId: 'g',
      topic: 't',
      fromBeginning: true,
      reconnectMaxDelayMs: 20,
      leaveStaleMember,
      brokers: { brokers: ['127.0.0.1:9999'], setting: 'the brokers option (KAFKA_BROKERS)' },
      remindEveryMs,
    },
    { eachBatch: async () => undefined },
    log as never,
    { rebuilt: () => rebuilt++ },
  );
  return { world, made, m, lines, fields, rebuilt: () => rebuilt };
}

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
};

describe('KafkaMembership', () => {
  it('rebuilds a consumer kafkajs gave up on, retrying while the broker is down, and is ready again once it joins', async () => {
    const { world, made, m, lines, rebuilt } = setup();
    await m.start();
    expect(m.status()).toEqual({ ready: true, state: 'running' });

    world.brokerDown = true;
    made[0].crash(false);
    expect(m.status()).toEqual({ ready: false, state: 'reconnecting' });
    await until(() => made.length >= 4); // several attempts fail while the broker is down
    expect(m.status().ready).toBe(false);
    world.brokerDown = false;
    await until(() => m.status().ready);

    const last = made[made.length - 1];
    expect(last.runs).toBe(1);
    expect(made[0].connected).toBe(false);
    expect(made.slice(1, -1).every((c) => !c.connected && c.runs === 0)).toBe(true);
    expect(rebuilt()).toBe(1);
    // One line per state change, not one per failed attempt.
    expect(lines.filter((l) => /gave up/.test(l))).toHaveLength(1);
    // A rebuild's wait begins as one at start does: with the brokers and what sets them.
    expect(lines.find((l) => /gave up/.test(l))).toMatch(
      /until the broker answers at 127\.0\.0\.1:9999 \(check the brokers option \(KAFKA_BROKERS\) and that the broker is up\)$/,
    );
    expect(lines.filter((l) => /rebuilt/.test(l))).toHaveLength(1);
    await m.stop();
    expect(last.connected).toBe(false);
    expect(m.status().state).toBe('stopped');
  });

  it('takes the member of a consumer that gave up out of the group before the rebuild joins, retrying while the coordinator does not answer', async () => {
    const left: string[] = [];
    let coordinatorDown = true;
    const { made, m, lines } = setup(async (memberId) => {
      left.push(memberId);
      if (coordinatorDown) throw refused();
    });
    await m.start();
    // kafkajs never restarts a crashed consumer itself: it would join as a new member past the stale one.
    expect(await made[0].config.retry?.restartOnFailure?.(new Error('x'))).toBe(false);

    made[0].crash(false);
    await until(() => left.length >= 3);
    expect(made).toHaveLength(1); // no new consumer joins while the stale member may still be in the group
    coordinatorDown = false;
    await until(() => m.status().ready);
    expect(new Set(left)).toEqual(new Set(['member-0']));
    expect(made).toHaveLength(2);
    expect(lines.filter((l) => /stale member/.test(l))).toHaveLength(1);

    // The next crash leaves the rebuilt consumer's member, once.
    const before = left.length;
    made[1].crash(false);
    await until(() => made.length === 3 && m.status().ready);
    expect(left.slice(before)).toEqual(['member-1']);
    await m.stop();
  });

  it('fails an attempt whose join crashed though run() resolved: the next attempt joins, at start and in a rebuild', async () => {
    const { world, made, m, lines, rebuilt } = setup();
    world.joinCrashes = [protocolError('NOT_COORDINATOR', true)];
    await m.start();
    expect(m.status()).toEqual({ ready: true, state: 'running' });
    expect(made).toHaveLength(2);
    expect(made[0].connected).toBe(false);

    world.joinCrashes = [protocolError('NOT_COORDINATOR', true), protocolError('COORDINATOR_NOT_AVAILABLE', true)];
    made[1].crash(false);
    await until(() => m.status().ready);
    expect(made).toHaveLength(5);
    expect(made.slice(0, -1).every((c) => !c.connected)).toBe(true);
    expect(rebuilt()).toBe(1);
    // Each failed join logs its cause, though the state does not change.
    expect(lines.filter((l) => l === 'kafka consumer crashed')).toHaveLength(3);
    await m.stop();

    // A join the coordinator refuses for good ends the first start, like any configuration error.
    const other = setup();
    other.world.joinCrashes = [protocolError('GROUP_AUTHORIZATION_FAILED', false)];
    await expect(other.m.start()).rejects.toThrow('GROUP_AUTHORIZATION_FAILED');
    expect(other.made).toHaveLength(1);
    expect(other.made[0].connected).toBe(false);
  });

  it('waits for the broker at the first start (topic check included), but throws a configuration error at once', async () => {
    const { world, made, m, lines } = setup();
    world.brokerDown = true;
    let checks = 0;
    const started = m.start(async () => {
      checks++;
    });
    await until(() => made.length >= 3);
    expect(m.status().ready).toBe(false);
    world.brokerDown = false;
    await started;
    expect(m.status()).toEqual({ ready: true, state: 'running' });
    expect(checks).toBe(made.length);
    expect(lines.filter((l) => /unreachable at start/.test(l))).toHaveLength(1);
    await m.stop();

    const other = setup();
    await expect(
      other.m.start(async () => Promise.reject(new Error('topic t keeps messages for ever'))),
    ).rejects.toThrow('for ever');
    expect(other.made).toHaveLength(0);
  });

  it('names the brokers and their setting while it waits for them, reminds every remindEveryMs, and says when they answer', async () => {
    const { world, made, m, lines, fields } = setup(undefined, 40);
    world.brokerDown = true;
    const started = m.start();
    await until(() => lines.filter((l) => /^still waiting/.test(l)).length >= 2);
    const first = lines[0];
    expect(first).toContain('kafka unreachable at start at 127.0.0.1:9999');
    expect(first).toContain('check the brokers option (KAFKA_BROKERS)');
    expect(lines[1]).toMatch(/^still waiting for kafka at 127\.0\.0\.1:9999 after \d+m?s; check the brokers option/);
    expect(fields[1]).toMatchObject({ brokers: ['127.0.0.1:9999'], waitingMs: expect.any(Number) });
    const reminders = lines.length;
    expect(reminders).toBeLessThan(made.length); // not a line per attempt
    world.brokerDown = false;
    await started;
    expect(lines.filter((l) => /^kafka answered after .* of waiting at start$/.test(l))).toHaveLength(1);
    expect(fields[lines.findIndex((l) => /^kafka answered/.test(l))]).toMatchObject({ attempts: made.length });

    // A rebuild that waits reminds the same way.
    world.brokerDown = true;
    made[made.length - 1].crash(false);
    const before = lines.filter((l) => /^still waiting/.test(l)).length;
    await until(() => lines.filter((l) => /^still waiting/.test(l)).length > before);
    world.brokerDown = false;
    await until(() => m.status().ready);
    await m.stop();
  });

  it('leaves a retriable crash to kafkajs (no rebuild) and stops a rebuild in progress on stop()', async () => {
    const { world, made, m } = setup();
    await m.start();
    made[0].crash(true);
    expect(m.status()).toEqual({ ready: false, state: 'rejoining' });
    made[0].emit('group_join', { payload: { memberId: 'member-0' } });
    expect(m.status().ready).toBe(true);
    expect(made).toHaveLength(1);

    world.brokerDown = true;
    made[0].crash(false);
    await until(() => made.length >= 2);
    await m.stop();
    const n = made.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(made).toHaveLength(n);
    expect(m.status().state).toBe('stopped');
  });

  it('leaves the group for a pause and rejoins with a new consumer; a start while paused joins only at rejoin()', async () => {
    const { made, m } = setup();
    await m.start();
    await m.leave();
    expect(made[0].connected).toBe(false);
    expect(m.status()).toEqual({ ready: false, state: 'paused' });
    // The left consumer crashes in its join and kafkajs would restart it: it is disconnected again.
    let disconnects = 0;
    made[0].disconnect = async () => void disconnects++;
    made[0].crash(true);
    await until(() => disconnects === 1);
    expect(m.status().state).toBe('paused');
    await m.rejoin();
    await until(() => m.status().ready);
    expect(made).toHaveLength(2);
    expect(made[1].runs).toBe(1);
    await m.stop();

    const late = setup();
    await late.m.start(async () => undefined, true);
    expect(late.made).toHaveLength(0);
    expect(late.m.status()).toEqual({ ready: false, state: 'paused' });
    await late.m.rejoin();
    await until(() => late.m.status().ready);
    expect(late.made).toHaveLength(1);
    await late.m.stop();
  });

  it('a pause during a rebuild ends the rebuild without joining', async () => {
    const { world, made, m } = setup();
    await m.start();
    world.brokerDown = true;
    made[0].crash(false);
    await until(() => made.length >= 2);
    await m.leave();
    world.brokerDown = false;
    const n = made.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(made).toHaveLength(n);
    expect(made.every((c) => !c.connected)).toBe(true);
    expect(m.status().state).toBe('paused');
    await m.stop();
  });
});
