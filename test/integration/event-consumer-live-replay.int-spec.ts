// Replay of a LIVE kit group: `npm run cli -- replay --from earliest --follow` (the CLI's own parser and
// command, in process) against two member processes (the kit example run with node: needs
// `npm run build`) while events keep arriving. The replay asks the members to pause through
// replay_pauses; they commit their chunk and leave, the offsets move, they rejoin by themselves, and
// every event is applied exactly once. Then: a pause whose replay command died expires, and its members
// (one of them started while paused) rejoin by themselves.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { GroupPauseRepository } from '@tickets/event-consumer';
import { runCli } from '../../apps/cli/src/cli';
import { replayCli } from '../../apps/cli/src/replay.command';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { spawnKitChild, type KitChild } from '../support/kit-child-process';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(240_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('event consumer kit: replay of a live group (pause, move, rejoin)', () => {
  const topic = uniqueName('kit-live-replay');
  const groups: string[] = [];
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let prisma: PrismaClient;
  const children: KitChild[] = [];
  const apps: Awaited<ReturnType<typeof startExample>>[] = [];

  const members = async (groupId: string) => (await fx.admin.describeGroups([groupId])).groups[0]?.members.length ?? 0;
  const effects = async (groupId: string) =>
    (await db.query<{ n: number; distinct: number }>('SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM kit_test_effects WHERE group_id = $1', [groupId])).rows[0];
  const appliedIds = async (groupId: string) => (await db.query<{ event_id: string }>('SELECT event_id FROM kit_test_effects WHERE group_id = $1', [groupId])).rows.map((r) => r.event_id).sort();

  /** Sends `n` new ticket.created events (keyed by ticket, so spread over the partitions); returns their ids. */
  const produce = async (t: string, n: number): Promise<string[]> => {
    const events = Array.from({ length: n }, () => ticketCreated(randomUUID()));
    await fx.producer.send({ topic: t, acks: -1, messages: events.map((e) => toMessage(e)) });
    return events.map((e) => e.id);
  };

  const replayCommand = async (...argv: string[]) => {
    const out: string[] = [];
    const config = { kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-live-replay-it', topic }, database: { url: TEST_DATABASE_URL } } as AppConfig;
    const code = await runCli(['replay', ...argv], [replayCli], {
      out: (l) => out.push(l),
      err: (t) => out.push(t),
      open: async () => ({ ctx: { prisma, config, out: (l) => out.push(l), err: (t) => out.push(t) }, close: async () => undefined }),
    });
    return { code, out: out.join('\n') };
  };

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'kit-live-replay-it');
    fx = await kafkaFixture(topic, 4);
  });

  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGTERM');
    await Promise.all(children.map((c) => c.exited));
    await Promise.allSettled(apps.map((a) => a.app.close()));
    for (const g of groups) {
      for (const t of ['kit_test_effects', 'inbox_events', 'consumer_dead_letters', 'replays', 'replay_pauses']) await db.query(`DELETE FROM ${t} WHERE group_id = $1`, [g]);
      await fx?.admin.deleteGroups([g]).catch(() => undefined);
    }
    await Promise.allSettled([fx?.close(), db.end(), prisma.$disconnect()]);
  });

  it('two member processes under load: the replay pauses them, moves the offsets, they rejoin; each event applied once, none lost', async () => {
    const groupId = uniqueName('kit-live-replay-group');
    groups.push(groupId);
    const produced = await produce(topic, 300);
    const a = spawnKitChild({ topic, groupId });
    const b = spawnKitChild({ topic, groupId });
    children.push(a, b);
    await Promise.all([a.line('READY'), b.line('READY')]);
    await eventually(() => members(groupId), (n) => n === 2, 60_000, 'both processes in the group');

    // Load: 10 events every 50 ms, from before the replay until after it.
    let producing = true;
    const load = (async () => {
      while (producing) {
        produced.push(...(await produce(topic, 10)));
        await sleep(50);
      }
    })();
    await eventually(async () => (await effects(groupId)).n, (n) => n >= 300, 60_000, 'the backlog applied');

    const run = await replayCommand('--group', groupId, '--from', 'earliest', '--follow', '--timeout', '150s');
    producing = false;
    await load;
    // Consumption goes on after the replay.
    produced.push(...(await produce(topic, 50)));

    process.stdout.write(`live replay test (${produced.length} events sent, 2 member processes):\n${run.out}\n`);
    expect(run).toMatchObject({ code: 0 });
    const text = run.out;
    expect(text).toContain(`asking 2 members of ${groupId} to pause`);
    expect(text).toMatch(new RegExp(`group ${groupId} empty after \\d+\\.\\d s`));
    expect(text).toContain(`replay `);
    expect(text).toContain(`offsets moved; members rejoining (pause of ${groupId} released)`);
    expect(text).toMatch(new RegExp(`2 of 2 members back in group ${groupId} after`));
    const reread = Number(/re-read\s+(\d+) of (\d+)\n/.exec(text)?.[1]);
    const total = Number(/re-read\s+\d+ of (\d+)\n/.exec(text)?.[1]);
    const skipped = Number(/skipped \(already processed\)\s+(\d+)\n/.exec(text)?.[1]);
    const fresh = Number(/processed as new\s+(\d+)\n/.exec(text)?.[1]);
    expect(reread).toBe(total);
    expect(total).toBeGreaterThanOrEqual(300);
    // Everything applied before the pause came again and was skipped; what arrived meanwhile was new.
    expect(skipped).toBeGreaterThanOrEqual(300);
    expect(skipped + fresh).toBe(reread);
    expect(text).toMatch(/dead-lettered \(invalid\)\s+0/);

    // No process was stopped: both are still running and back in the group, and they apply what comes.
    expect([a.proc.exitCode, b.proc.exitCode]).toEqual([null, null]);
    await eventually(() => effects(groupId), (e) => e.n >= produced.length, 90_000, `all ${produced.length} events applied`);
    expect(await effects(groupId)).toEqual({ n: produced.length, distinct: produced.length });
    expect(await appliedIds(groupId)).toEqual([...produced].sort());
    expect(await members(groupId)).toBe(2);
    const paused = await new GroupPauseRepository().state(db, groupId);
    expect(paused).toBeUndefined();
  });

  it('a pause whose replay command died expires: its members, one of them started while paused, rejoin by themselves', async () => {
    const groupId = uniqueName('kit-pause-expiry-group');
    groups.push(groupId);
    const own = uniqueName('kit-pause-expiry');
    const fx2 = await kafkaFixture(own, 2);
    try {
      const produced = await produce(own, 40);
      const first = [await startExample(kitOptions(own, groupId)), await startExample(kitOptions(own, groupId))];
      apps.push(...first);
      await eventually(async () => (await effects(groupId)).n, (n) => n === 40, 60_000, 'the first events applied');
      await eventually(() => members(groupId), (n) => n === 2, 60_000, 'both members in the group');

      // What a replay command does first, and then it dies: nobody renews or releases the request.
      const pauses = new GroupPauseRepository();
      const claim = await pauses.request(db, groupId, randomUUID(), 'a replay command that died', 6_000);
      expect(claim.claimed).toBe(true);
      await eventually(() => first.map((x) => x.server.readiness().state), (s) => s.every((x) => x === 'paused'), 20_000, 'both members paused');
      await eventually(() => members(groupId), (n) => n === 0, 20_000, 'the group empty');

      // The command renewed its request once more before it died; a member started meanwhile does not join either.
      expect(await pauses.renew(db, groupId, claim.claimed ? claim.requestId : '', 6_000)).toBe(true);
      const late = await startExample(kitOptions(own, groupId));
      apps.push(late);
      expect(late.server.readiness().state).toBe('paused');
      const during = await pauses.state(db, groupId);
      produced.push(...(await produce(own, 30)));

      // The request expires (its command renews it no more): all three join and apply what came meanwhile.
      const all = [...first, late];
      await eventually(() => all.map((x) => x.server.readiness().state), (s) => s.every((x) => x === 'running'), 60_000, 'every member running again');
      expect(during).toMatchObject({ requestedBy: 'a replay command that died', inForce: true });
      await eventually(() => effects(groupId), (e) => e.n >= produced.length, 60_000, 'the events sent while paused applied');
      expect(await effects(groupId)).toEqual({ n: produced.length, distinct: produced.length });
      expect(await appliedIds(groupId)).toEqual([...produced].sort());
      expect(await members(groupId)).toBe(3);
    } finally {
      await Promise.allSettled(apps.splice(0).map((x) => x.app.close()));
      await fx2.close();
    }
  });
});
