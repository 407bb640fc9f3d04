// Replay of a LIVE kit group, while events keep arriving, against two member processes (the kit
// example run with node: needs `npm run build`). The replay asks the members to pause through the kit's
// replay_pauses table; they commit their chunk and leave, the offsets move, they rejoin by themselves,
// and every event is applied exactly once. Twice: by the compiled `ticket-events` bin on a database of
// its own holding only the kit schema (a downstream team), and by `npm run cli -- replay` (the CLI's own
// parser and command, in process, the same kit code) on the service's database. Then: a pause whose
// replay command died expires and its members (one of them started while paused) rejoin by themselves;
// and two kit schemas in one database announce their pauses on channels of their own.
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import type { AppConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { GroupPauseRepository, KitTables, migrate } from '@tickets/event-consumer/admin';
import { runCli } from '../../apps/cli/src/cli';
import { replayCli } from '../../apps/cli/src/replay.command';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { spawnKitChild, type KitChild } from '../support/kit-child-process';
import { runKitBin, scratchDatabase, type ScratchDatabase } from '../support/kit-databases';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(300_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('event consumer kit: replay of a live group (pause, move, rejoin)', () => {
  const groups: string[] = [];
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let own: ScratchDatabase;
  let ownDb: Pool;
  let prisma: PrismaClient;
  const children: KitChild[] = [];
  const apps: Awaited<ReturnType<typeof startExample>>[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const pauses = new GroupPauseRepository(new KitTables());

  const members = async (groupId: string) => (await fx.admin.describeGroups([groupId])).groups[0]?.members.length ?? 0;
  const effects = async (on: Pool, groupId: string) =>
    (
      await on.query<{ n: number; distinct: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM kit_test_effects WHERE group_id = $1',
        [groupId],
      )
    ).rows[0];
  const appliedIds = async (on: Pool, groupId: string) =>
    (await on.query<{ event_id: string }>('SELECT event_id FROM kit_test_effects WHERE group_id = $1', [groupId])).rows
      .map((r) => r.event_id)
      .sort();

  /** Sends `n` new ticket.created events (keyed by ticket, so spread over the partitions); returns their ids. */
  const produce = async (t: string, n: number): Promise<string[]> => {
    const events = Array.from({ length: n }, () => ticketCreated(randomUUID()));
    await fx.producer.send({ topic: t, acks: -1, messages: events.map((e) => toMessage(e)) });
    return events.map((e) => e.id);
  };

  const cliReplay = async (...argv: string[]) => {
    const out: string[] = [];
    const config = {
      kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-live-replay-it', topic: 'ticket-events' },
      database: { url: TEST_DATABASE_URL },
    } as AppConfig;
    const code = await runCli(['replay', ...argv], [replayCli], {
      out: (l) => out.push(l),
      err: (t) => out.push(t),
      open: async () => ({
        ctx: { prisma, config, out: (l) => out.push(l), err: (t) => out.push(t) },
        close: async () => undefined,
      }),
    });
    return { code, out: out.join('\n') };
  };

  /**
   * Two member processes of a new group on `on` (databaseUrl), a backlog of 300 events, then a load of
   * 10 events every 50 ms from before `replay` until after it, and 50 more after it. Checks what the
   * replay printed and that every event sent was applied exactly once by the two processes, still running.
   */
  async function liveReplay(
    label: string,
    on: { url: string; pool: Pool },
    replay: (groupId: string, topic: string) => Promise<{ code: number; out: string }>,
  ) {
    const groupId = uniqueName(label);
    groups.push(groupId);
    // A topic of its own: the group reads it whole from earliest, and finds only this case's events.
    const topic = uniqueName(`${label}-topic`);
    const fxT = await kafkaFixture(topic, 4);
    cleanups.push(() => fxT.close());
    const produced = await produce(topic, 300);
    const a = spawnKitChild({ topic, groupId, databaseUrl: on.url });
    const b = spawnKitChild({ topic, groupId, databaseUrl: on.url });
    children.push(a, b);
    await Promise.all([a.line('READY'), b.line('READY')]);
    await eventually(
      () => members(groupId),
      (n) => n === 2,
      60_000,
      'both processes in the group',
    );

    let producing = true;
    const load = (async () => {
      while (producing) {
        produced.push(...(await produce(topic, 10)));
        await sleep(50);
      }
    })();
    await eventually(
      async () => (await effects(on.pool, groupId)).n,
      (n) => n >= 300,
      60_000,
      'the backlog applied',
    );

    const run = await replay(groupId, topic);
    producing = false;
    await load;
    // Consumption goes on after the replay.
    produced.push(...(await produce(topic, 50)));

    process.stdout.write(`live replay (${label}, ${produced.length} events sent, 2 member processes):\n${run.out}\n`);
    expect(run).toMatchObject({ code: 0 });
    const text = run.out;
    expect(text).toContain(`asking 2 members of ${groupId} to pause`);
    expect(text).toMatch(new RegExp(`group ${groupId} empty after \\d+\\.\\d s`));
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
    await eventually(
      () => effects(on.pool, groupId),
      (e) => e.n >= produced.length,
      90_000,
      `all ${produced.length} events applied`,
    );
    expect(await effects(on.pool, groupId)).toEqual({ n: produced.length, distinct: produced.length });
    expect(await appliedIds(on.pool, groupId)).toEqual([...produced].sort());
    expect(await members(groupId)).toBe(2);
    expect(await pauses.state(on.pool, groupId)).toBeUndefined();
    // Done: the members stop (SIGTERM) so that they do not outlive the case.
    for (const c of [a, b]) c.proc.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
  }

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'kit-live-replay-it');
    fx = await kafkaFixture(uniqueName('kit-live-replay'), 1);
    own = await scratchDatabase('live_replay');
    ownDb = new Pool({ connectionString: own.url, max: 2 });
  });

  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGTERM');
    await Promise.all(children.map((c) => c.exited));
    await Promise.allSettled(apps.map((a) => a.app.close()));
    for (const g of groups) {
      await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [g]);
      for (const t of ['inbox_events', 'consumer_dead_letters', 'replays', 'replay_pauses'])
        await db.query(`DELETE FROM ticket_events.${t} WHERE group_id = $1`, [g]);
      await fx?.admin.deleteGroups([g]).catch(() => undefined);
    }
    await Promise.allSettled(cleanups.map((c) => c()));
    await Promise.allSettled([fx?.close(), db.end(), ownDb?.end(), prisma.$disconnect()]);
    await own?.drop();
  });

  it('`ticket-events replay` (the compiled bin) on a database holding only the kit schema: two live member processes under load pause, leave and rejoin; each event applied once', async () => {
    const env = { DATABASE_URL: own.url, KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(',') };
    expect(await runKitBin(['migrate'], env)).toMatchObject({
      code: 0,
      out: 'migrated schema ticket_events to version 5: applied 1 kit_tables, 2 replay_pauses, 3 dead_letter_holds, 4 requeued_holds, 5 replay_dead_letters\n',
    });
    await ownDb.query(EFFECTS_DDL);
    const help = await runKitBin(['replay', '--help']);
    expect(help.out).toContain('[--no-pause [--wait]]');
    expect(help.out).toContain('A group with live members is asked to pause');

    await liveReplay('kit-bin-live-replay', { url: own.url, pool: ownDb }, (groupId, topic) =>
      runKitBin(
        ['replay', '--group', groupId, '--topic', topic, '--from', 'earliest', '--follow', '--timeout', '100s'],
        env,
      ),
    );

    // The consumer's database: the kit's schema and the consumer's own table, nothing of the ticket service.
    const tables = await ownDb.query<{ s: string; t: string }>(
      "SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
    );
    expect(tables.rows.map((r) => `${r.s}.${r.t}`)).toEqual([
      'public.kit_test_effects',
      'ticket_events.consumer_dead_letters',
      'ticket_events.dead_letter_actions',
      'ticket_events.inbox_events',
      'ticket_events.kit_migrations',
      'ticket_events.replay_partitions',
      'ticket_events.replay_pauses',
      'ticket_events.replays',
    ]);
  });

  it('`npm run cli -- replay` on the service database: the same pause, move and rejoin of two live member processes', async () => {
    await liveReplay('kit-cli-live-replay', { url: TEST_DATABASE_URL, pool: db }, (groupId, topic) =>
      cliReplay('--group', groupId, '--topic', topic, '--from', 'earliest', '--follow', '--timeout', '150s'),
    );
  });

  it('a pause whose replay command died expires: its members, one of them started while paused, rejoin by themselves', async () => {
    const groupId = uniqueName('kit-pause-expiry-group');
    groups.push(groupId);
    const ownTopic = uniqueName('kit-pause-expiry');
    const fx2 = await kafkaFixture(ownTopic, 2);
    try {
      const produced = await produce(ownTopic, 40);
      const first = [
        await startExample(kitOptions(ownTopic, groupId)),
        await startExample(kitOptions(ownTopic, groupId)),
      ];
      apps.push(...first);
      await eventually(
        async () => (await effects(db, groupId)).n,
        (n) => n === 40,
        60_000,
        'the first events applied',
      );
      await eventually(
        () => members(groupId),
        (n) => n === 2,
        60_000,
        'both members in the group',
      );

      // What a replay command does first, and then it dies: nobody renews or releases the request.
      const claim = await pauses.request(db, groupId, randomUUID(), 'a replay command that died', 6_000);
      expect(claim.claimed).toBe(true);
      await eventually(
        () => first.map((x) => x.server.readiness().state),
        (s) => s.every((x) => x === 'paused'),
        20_000,
        'both members paused',
      );
      await eventually(
        () => members(groupId),
        (n) => n === 0,
        20_000,
        'the group empty',
      );

      // The command renewed its request once more before it died; a member started meanwhile does not join either.
      expect(await pauses.renew(db, groupId, claim.claimed ? claim.requestId : '', 6_000)).toBe(true);
      const late = await startExample(kitOptions(ownTopic, groupId));
      apps.push(late);
      expect(late.server.readiness().state).toBe('paused');
      const during = await pauses.state(db, groupId);
      produced.push(...(await produce(ownTopic, 30)));

      // The request expires (its command renews it no more): all three join and apply what came meanwhile.
      const all = [...first, late];
      await eventually(
        () => all.map((x) => x.server.readiness().state),
        (s) => s.every((x) => x === 'running'),
        60_000,
        'every member running again',
      );
      expect(during).toMatchObject({ requestedBy: 'a replay command that died', inForce: true });
      await eventually(
        () => effects(db, groupId),
        (e) => e.n >= produced.length,
        60_000,
        'the events sent while paused applied',
      );
      expect(await effects(db, groupId)).toEqual({ n: produced.length, distinct: produced.length });
      expect(await appliedIds(db, groupId)).toEqual([...produced].sort());
      expect(await members(groupId)).toBe(3);
    } finally {
      await Promise.allSettled(apps.splice(0).map((x) => x.app.close()));
      await fx2.close();
    }
  });

  it('two kit schemas in one database: each announces its pauses on a channel of its own', async () => {
    // ticket_events is there already when the bin's case ran first; migrate() is idempotent.
    for (const schema of ['ticket_events', 'other_events']) await migrate({ databaseUrl: own.url, schema });
    const mine = new GroupPauseRepository(new KitTables());
    const other = new GroupPauseRepository(new KitTables('other_events'));
    expect([mine.channel, other.channel]).toEqual(['ticket_events_pause', 'other_events_pause']);
    const heard = { mine: [] as string[], other: [] as string[] };
    const listeners = await Promise.all(
      (['mine', 'other'] as const).map(async (k) => {
        const c = new Client({ connectionString: own.url });
        await c.connect();
        c.on('notification', (n) => heard[k].push(`${n.channel} ${n.payload}`));
        await (k === 'mine' ? mine : other).listen(c);
        return c;
      }),
    );
    try {
      // The same group name in both schemas: the other schema's request first, then this one's.
      const groupId = uniqueName('kit-two-schemas');
      expect(await other.request(ownDb, groupId, randomUUID(), 'other schema', 5_000)).toMatchObject({ claimed: true });
      expect(await mine.request(ownDb, groupId, randomUUID(), 'this schema', 5_000)).toMatchObject({ claimed: true });
      // Notifications reach a listener in commit order: had the other request woken this schema's
      // listener, it would have come first.
      await eventually(
        () => heard.mine.length + heard.other.length,
        (n) => n >= 2,
        10_000,
        'both notifications',
      );
      expect(heard).toEqual({ mine: [`ticket_events_pause ${groupId}`], other: [`other_events_pause ${groupId}`] });
      expect(await mine.state(ownDb, groupId)).toMatchObject({ requestedBy: 'this schema', inForce: true });
      expect(await other.state(ownDb, groupId)).toMatchObject({ requestedBy: 'other schema', inForce: true });
    } finally {
      await Promise.all(listeners.map((c) => c.end()));
    }
  });
});
