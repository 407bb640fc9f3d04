import { parseDuration } from '@tickets/config';
import { isReplayStart, replayTopic, type ReplayOutcome } from '@tickets/event-consumer/admin';
import { CLI, UsageProblem, type CliCommand } from './command-line';

/** Exit codes: 0 done, 1 failed, 2 usage, 3 the group is busy (--no-pause without --wait, or paused by another replay), 4 timed out. */
export const REPLAY_EXIT = { ok: 0, failed: 1, usage: 2, groupBusy: 3, timeout: 4 } as const;

const EXIT_OF: Record<ReplayOutcome['outcome'], number> = {
  started: REPLAY_EXIT.ok,
  completed: REPLAY_EXIT.ok,
  'unknown-topic': REPLAY_EXIT.failed,
  'unknown-group': REPLAY_EXIT.failed,
  'no-replay': REPLAY_EXIT.failed,
  failed: REPLAY_EXIT.failed,
  'group-busy': REPLAY_EXIT.groupBusy,
  timeout: REPLAY_EXIT.timeout,
};

interface ReplayArgs {
  group: string;
  topic?: string;
  from?: string;
  partition?: number;
  newGroup: boolean;
  pause: boolean;
  wait: boolean;
  follow: boolean;
  timeoutMs: number;
}

/** `replay`: rewinds a consumer group's offsets so its consumers re-read the topic (the kit's own replay, the code of `ticket-events replay`). */
export const replayCli: CliCommand<ReplayArgs> = {
  name: 'replay',
  summary: "move a consumer group's offsets back so it re-reads the topic (safe: dedup by event id)",
  usage: [
    'replay --group <group> [--topic <topic>] --from earliest|<ISO-8601 time> [--partition <n>] [--new-group] [--no-pause [--wait]] [--follow] [--timeout 30m]',
    "replay --group <group> [--topic <topic>] --follow      (follow the group's latest replay)",
  ],
  details: [
    "Moves the consumer group's committed offsets back, so the consumers re-read the topic from there.",
    "Kafka moves only an empty group's offsets. A group with live members is asked to pause: each member (a",
    'consumer built on @tickets/event-consumer) finishes and commits its chunk, leaves the group, and rejoins by',
    'itself once the offsets moved. No consumer is stopped by hand; nothing is lost or handled twice (inbox).',
    'With --no-pause a group with live members is refused (exit 3), or with --wait waited for until it is empty.',
    "--follow stays until the group's committed offsets pass the messages that existed at replay time and",
    'reports how many were re-read and how many were skipped as already processed (no new notification).',
    'Exit codes: 0 done, 1 failed, 2 usage, 3 the group is busy (--no-pause, or paused by another replay), 4 timed out.',
  ],
  options: {
    group: {
      type: 'string',
      value: '<group>',
      description: 'the consumer group to rewind, e.g. ticket-notifier',
      required: true,
    },
    topic: {
      type: 'string',
      value: '<topic>',
      description: 'the topic to re-read',
      default: 'TICKET_EVENTS_TOPIC, ticket-events',
    },
    from: {
      type: 'string',
      value: 'earliest|<time>',
      description:
        'where to start: the oldest retained message, or the first one at or after an ISO-8601 time such as 2026-11-30T08:00:00Z',
      default: 'none: only --follow',
    },
    partition: {
      type: 'string',
      value: '<n>',
      description: 'rewind only this partition (the others keep their offsets)',
      default: 'every partition',
    },
    'new-group': {
      type: 'boolean',
      description:
        "allow a group with no members, no committed offset on the topic and no rows in the kit's tables (one that has not consumed yet); without it such a group is refused (exit 1)",
      default: 'off',
    },
    'no-pause': {
      type: 'boolean',
      description: 'do not ask live members to pause: refuse a group with live members (exit 3), or --wait',
      default: 'off (pause)',
    },
    wait: {
      type: 'boolean',
      description:
        'with --no-pause: wait for the group to become empty instead of refusing (exit 3); a pause always waits for the members to leave',
      default: 'off',
    },
    follow: {
      type: 'boolean',
      description: 'stay, show progress and report re-read vs skipped when done',
      default: 'off',
    },
    timeout: {
      type: 'string',
      value: '<duration>',
      description: 'give up waiting or following after this long (exit 4)',
      default: '30m',
    },
  },
  validate(values) {
    const group = values.group as string | undefined;
    if (!group)
      return new UsageProblem(
        "--group <group> is required: the consumer group to rewind (the notifier's is NOTIFIER_GROUP_ID, ticket-notifier)",
      );
    const from = values.from as string | undefined;
    if (from !== undefined && !isReplayStart(from))
      return new UsageProblem(
        `--from must be "earliest" or an ISO-8601 time such as 2026-11-30T08:00:00Z, got "${from}"`,
      );
    const follow = values.follow === true;
    if (values['new-group'] === true && from === undefined)
      return new UsageProblem(
        '--new-group goes only with --from: it lets a replay set the offsets of a group that has none',
      );
    if (from === undefined && !follow)
      return new UsageProblem('--from is required (or --follow to follow the latest replay)');
    const partitionText = values.partition as string | undefined;
    const partition = partitionText === undefined ? undefined : Number(partitionText);
    if (partition !== undefined && !(Number.isInteger(partition) && partition >= 0 && /^\d+$/.test(partitionText!))) {
      return new UsageProblem(`--partition must be a partition number (0, 1, ...), got "${partitionText}"`);
    }
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration((values.timeout as string | undefined) ?? '30m');
    } catch (e) {
      return new UsageProblem(`--timeout: ${(e as Error).message}`);
    }
    const pause = values['no-pause'] !== true;
    return {
      group,
      topic: values.topic as string | undefined,
      from,
      partition,
      newGroup: values['new-group'] === true,
      pause,
      wait: values.wait === true,
      follow,
      timeoutMs,
    };
  },
  async run(args, { config, out }) {
    const topic = args.topic ?? config.kafka.topic;
    const result = await replayTopic(
      { ...args, topic },
      {
        databaseUrl: config.database.url,
        kafka: { brokers: config.kafka.brokers, clientId: `${config.kafka.clientId}-replay` },
        out,
        deadLetters: (g) => `${CLI} dead-letters list --kind consumer --group ${g}`,
      },
    );
    if (result.outcome === 'started') {
      out(
        `the group's consumers re-read from there (running ones rejoin by themselves, stopped ones when started); follow the replay with: ${CLI} replay --group ${args.group} --topic ${topic} --follow`,
      );
    }
    return EXIT_OF[result.outcome];
  },
};
