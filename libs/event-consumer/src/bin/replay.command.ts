import { isReplayStart, replayTopic, type ReplayOutcome } from '../replay/topic-replay';
import { shellQuoted } from '../shell-quoted';
import { BIN, EXIT, Usage, duration, target, type Command } from './bin-support';

const EXIT_OF: Record<ReplayOutcome['outcome'], number> = {
  started: EXIT.ok,
  completed: EXIT.ok,
  'unknown-topic': EXIT.failed,
  'unknown-group': EXIT.failed,
  'no-replay': EXIT.failed,
  failed: EXIT.failed,
  'group-busy': EXIT.groupBusy,
  timeout: EXIT.timeout,
};

export const replayCommand: Command = {
  name: 'replay',
  summary: "move a consumer group's offsets back so it re-reads the topic (each event still applied once)",
  help: [
    'ticket-events replay --group <group> --from earliest|<ISO-8601 time> [--partition <n>] [--new-group] [--no-pause [--wait]] [--follow] [--timeout 30m]',
    "ticket-events replay --group <group> --follow        (follow the group's latest replay)",
    '',
    "Moves the group's committed offsets back, records the replay in the kit's tables, and with --follow",
    'stays until the members have re-read every message that existed at replay time, then reports how',
    'many were re-read and how many were skipped as already processed (no second effect).',
    "Kafka moves only an empty group's offsets. A group with live members is asked to pause (through the",
    "kit's replay_pauses table, which every member reads): each member finishes and commits its chunk,",
    'leaves the group, and rejoins by itself once the offsets moved. No consumer is stopped by hand.',
    'With --no-pause a group with live members is refused (exit 3), or with --wait waited for until empty.',
    '',
    '  --group <group>        the consumer group (required)',
    '  --from <where>         earliest, or the first message at or after an ISO-8601 time (2026-11-30T08:00:00Z)',
    '  --partition <n>        only this partition (default: every partition)',
    '  --new-group            allow a group with no members, no committed offset on the topic and no rows in the',
    "                         kit's tables (one that has not consumed yet); without it such a group is refused (exit 1)",
    '  --no-pause             do not ask live members to pause: refuse a group with live members (exit 3)',
    '  --wait                 with --no-pause: wait for the group to become empty instead of refusing',
    '  --follow               show progress and report when the members are done',
    '  --timeout <duration>   give up waiting or following after this long (default 30m, exit 4)',
    'Exit codes: 0 done, 1 failed, 2 wrong usage, 3 the group is busy (--no-pause, or paused by another',
    'replay), 4 timed out (the members did not leave within 2 min, or the follow).',
  ],
  options: {
    group: { type: 'string' },
    from: { type: 'string' },
    partition: { type: 'string' },
    'new-group': { type: 'boolean' },
    'no-pause': { type: 'boolean' },
    wait: { type: 'boolean' },
    follow: { type: 'boolean' },
    timeout: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals.length) throw new Usage(`replay takes no positional arguments (got "${positionals.join(' ')}")`);
    const group = values.group as string | undefined;
    if (!group) throw new Usage('--group <group> is required: the consumer group to rewind');
    const from = values.from as string | undefined;
    if (from !== undefined && !isReplayStart(from))
      throw new Usage(`--from must be "earliest" or an ISO-8601 time such as 2026-11-30T08:00:00Z, got "${from}"`);
    const follow = values.follow === true;
    if (values['new-group'] === true && from === undefined)
      throw new Usage('--new-group goes only with --from: it lets a replay set the offsets of a group that has none');
    if (from === undefined && !follow)
      throw new Usage('--from earliest|<time> is required (or --follow alone to follow the latest replay)');
    const p = values.partition as string | undefined;
    if (p !== undefined && !/^\d+$/.test(p))
      throw new Usage(`--partition must be a partition number (0, 1, ...), got "${p}"`);
    const timeoutMs = duration((values.timeout as string | undefined) ?? '30m', '--timeout');
    const t = target(values, { database: true, brokers: true });
    const result = await replayTopic(
      {
        group,
        topic: t.topic,
        from,
        partition: p === undefined ? undefined : Number(p),
        newGroup: values['new-group'] === true,
        pause: values['no-pause'] !== true,
        wait: values.wait === true,
        follow,
        timeoutMs,
      },
      {
        databaseUrl: t.databaseUrl,
        schema: t.schema,
        kafka: { brokers: t.brokers, clientId: `${BIN}-replay` },
        out: io.out,
        deadLetters: (g) => `${BIN} dead-letters list --group ${shellQuoted(g)}`,
      },
    );
    if (result.outcome === 'started')
      io.out(
        `the group's consumers re-read from there (running ones rejoin by themselves); follow the replay with: ${BIN} replay --group ${shellQuoted(group)} --topic ${shellQuoted(t.topic)} --follow`,
      );
    return EXIT_OF[result.outcome];
  },
};
