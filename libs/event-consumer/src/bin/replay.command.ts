import { isReplayStart, replayTopic, type ReplayOutcome } from '../replay/topic-replay';
import { BIN, EXIT, Usage, duration, target, type Command } from './bin-support';

const EXIT_OF: Record<ReplayOutcome['outcome'], number> = {
  started: EXIT.ok,
  completed: EXIT.ok,
  'unknown-topic': EXIT.failed,
  'no-replay': EXIT.failed,
  failed: EXIT.failed,
  'group-busy': EXIT.groupBusy,
  timeout: EXIT.timeout,
};

export const replayCommand: Command = {
  name: 'replay',
  summary: "move a consumer group's offsets back so it re-reads the topic (each event still applied once)",
  help: [
    'ticket-events replay --group <group> --from earliest|<ISO-8601 time> [--partition <n>] [--wait] [--follow] [--timeout 30m]',
    'ticket-events replay --group <group> --follow        (follow the group\'s latest replay)',
    '',
    "Moves the group's committed offsets back, records the replay in the kit's tables, and with --follow",
    'stays until the members have re-read every message that existed at replay time, then reports how',
    'many were re-read and how many were skipped as already processed (no second effect).',
    'Kafka moves only an empty group\'s offsets: stop the group\'s consumers first, or pass --wait to wait',
    'until it has no live members.',
    '',
    '  --group <group>        the consumer group (required)',
    '  --from <where>         earliest, or the first message at or after an ISO-8601 time (2026-11-30T08:00:00Z)',
    '  --partition <n>        only this partition (default: every partition)',
    '  --wait                 wait for the group to become empty instead of refusing (exit 3)',
    '  --follow               show progress and report when the members are done',
    '  --timeout <duration>   give up waiting or following after this long (default 30m, exit 4)',
    'Exit codes: 0 done, 1 failed, 2 wrong usage, 3 the group has live members, 4 timed out.',
  ],
  options: {
    group: { type: 'string' },
    from: { type: 'string' },
    partition: { type: 'string' },
    wait: { type: 'boolean' },
    follow: { type: 'boolean' },
    timeout: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals.length) throw new Usage(`replay takes no positional arguments (got "${positionals.join(' ')}")`);
    const group = values.group as string | undefined;
    if (!group) throw new Usage('--group <group> is required: the consumer group to rewind');
    const from = values.from as string | undefined;
    if (from !== undefined && !isReplayStart(from)) throw new Usage(`--from must be "earliest" or an ISO-8601 time such as 2026-11-30T08:00:00Z, got "${from}"`);
    const follow = values.follow === true;
    if (from === undefined && !follow) throw new Usage('--from earliest|<time> is required (or --follow alone to follow the latest replay)');
    const p = values.partition as string | undefined;
    if (p !== undefined && !/^\d+$/.test(p)) throw new Usage(`--partition must be a partition number (0, 1, ...), got "${p}"`);
    const timeoutMs = duration((values.timeout as string | undefined) ?? '30m', '--timeout');
    const t = target(values, { database: true, brokers: true });
    const result = await replayTopic(
      { group, topic: t.topic, from, partition: p === undefined ? undefined : Number(p), wait: values.wait === true, follow, timeoutMs },
      { databaseUrl: t.databaseUrl, schema: t.schema, kafka: { brokers: t.brokers, clientId: `${BIN}-replay` }, out: io.out },
    );
    if (result.outcome === 'started') io.out(`start the group's consumers, then follow the replay with: ${BIN} replay --group ${group} --topic ${t.topic} --follow`);
    return EXIT_OF[result.outcome];
  },
};
