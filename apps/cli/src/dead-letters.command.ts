import {
  ConsumerDeadLetters,
  DEAD_LETTER_KINDS,
  DeadLetters,
  deadLetterFate,
  followRequeue,
  type FollowCommands,
  kafkaRepublisher,
  parseTimeBound,
  type ActionResult,
  type DeadLetterFilter,
  type DeadLetterItem,
  type DeadLetterKind,
} from '@tickets/dead-letters';
import { parseDuration } from '@tickets/config';
import { urlProblem } from '@tickets/webhook-targets';
import { osUser } from './actor';
import { UsageProblem, type CliCommand, type Values } from './command-line';

type Action = 'list' | 'show' | 'requeue' | 'discard';

export interface DeadLettersArgs {
  action: Action;
  filter: DeadLetterFilter;
  json: boolean;
  dryRun: boolean;
  note: string | null;
  /** Absent: the OS user running the command. */
  by?: string;
  /** Requeue of one notification: to this URL, once. */
  url?: string;
  /** Requeue of consumer dead letters: follow the copies for at most this long (ConsumerDeadLetters.follow). */
  followMs?: number;
}

const ACTIONS: Action[] = ['list', 'show', 'requeue', 'discard'];
/** How this CLI spells the consumer kind's commands its advice names. */
const COMMANDS: FollowCommands = {
  requeue: (id) => `npm run cli -- dead-letters requeue --kind consumer --id ${id} --follow`,
  list: (g, ticket) =>
    `npm run cli -- dead-letters list --kind consumer --group ${g} --all${ticket ? ` --ticket ${ticket}` : ''}`,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FILTERS = ['tenant', 'ticket', 'group', 'reason', 'since', 'until'] as const;

function onlyWith(values: Values, action: Action, names: string[], allowed: Action[]): UsageProblem | undefined {
  const stray = names.find((n) => values[n] !== undefined && !allowed.includes(action));
  return stray ? new UsageProblem(`--${stray} goes only with ${allowed.join(' or ')}`) : undefined;
}

function validate(values: Values, positionals: string[]): DeadLettersArgs | UsageProblem {
  const [action, ...extra] = positionals as [Action, ...string[]];
  if (!ACTIONS.includes(action) || extra.length) {
    return new UsageProblem(
      `the action is one of list, show, requeue, discard${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
    );
  }
  const kind = values.kind as DeadLetterKind | undefined;
  if (kind !== undefined && !DEAD_LETTER_KINDS.includes(kind))
    return new UsageProblem(`--kind is one of ${DEAD_LETTER_KINDS.join(', ')}, not "${kind}"`);
  for (const name of ['id', 'ticket'] as const) {
    const v = values[name];
    if (typeof v === 'string' && !UUID.test(v)) return new UsageProblem(`--${name} must be a uuid, got "${v}"`);
  }
  const stray =
    onlyWith(values, action, ['dry-run', 'reason-note', 'by'], ['requeue', 'discard']) ??
    onlyWith(values, action, ['all'], ['list']) ??
    onlyWith(values, action, [...FILTERS, 'limit'], ['list', 'requeue', 'discard']);
  if (stray) return stray;
  const filter: DeadLetterFilter = { kind, id: values.id as string | undefined, limit: 50, all: values.all === true };
  for (const name of ['tenant', 'ticket', 'group', 'reason'] as const)
    if (typeof values[name] === 'string') filter[name] = values[name] as string;
  if (filter.group !== undefined && !filter.group.trim()) return new UsageProblem('--group must name a consumer group');
  if (filter.group !== undefined && kind === 'outbox')
    return new UsageProblem(
      '--group goes with --kind consumer or notification: outbox dead letters belong to no consumer group',
    );
  for (const name of ['since', 'until'] as const) {
    if (typeof values[name] !== 'string') continue;
    try {
      filter[name] = parseTimeBound(values[name] as string);
    } catch (e) {
      return new UsageProblem(`--${name}: ${(e as Error).message}`);
    }
  }
  if (typeof values.limit === 'string') {
    const limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      return new UsageProblem(`--limit must be a whole number from 1 to 1000, got "${values.limit}"`);
    filter.limit = limit;
  }
  const withId = FILTERS.find((n) => values[n] !== undefined);
  if (filter.id && withId && action !== 'list')
    return new UsageProblem(
      `--id names one dead letter; --${withId} would not narrow it: drop --${withId}, or drop --id to choose by filters`,
    );
  if (action === 'show' && !filter.id)
    return new UsageProblem(
      'show needs --id <id>: the event id (outbox), dead letter id (consumer) or notification id',
    );
  if (action === 'requeue' || action === 'discard') {
    if (!kind)
      return new UsageProblem(
        `${action} needs --kind outbox|consumer|notification (each kind is requeued differently: see --help)`,
      );
    if (!filter.id && !FILTERS.some((n) => values[n] !== undefined)) {
      return new UsageProblem(
        `${action} needs --id <id>, or at least one of --tenant, --ticket, --group, --reason, --since, --until to choose the dead letters`,
      );
    }
  }
  const by = values.by as string | undefined;
  if (by !== undefined && !by.trim()) return new UsageProblem('--by must name someone');
  const url = values.url as string | undefined;
  if (url !== undefined) {
    if (action !== 'requeue' || kind !== 'notification' || !filter.id)
      return new UsageProblem(
        '--url goes only with requeue --kind notification --id <id> (one notification, once; for every later one: webhooks set)',
      );
    const bad = urlProblem(url);
    if (bad) return new UsageProblem(`--url ${bad}`);
  }
  let followMs: number | undefined;
  if (values.follow === true) {
    if (action !== 'requeue' || kind !== 'consumer')
      return new UsageProblem('--follow goes only with requeue --kind consumer');
    if (values['dry-run'] === true)
      return new UsageProblem('--follow follows copies a requeue produced: not with --dry-run');
    const timeout = (values.timeout as string | undefined) ?? '30m';
    // A unit is required: a bare number would be milliseconds.
    if (!/^\d+(\.\d+)?(s|m|h)$/.test(timeout))
      return new UsageProblem(`--timeout "${timeout}" is not a duration (30s, 10m, 1h)`);
    followMs = parseDuration(timeout);
  } else if (values.timeout !== undefined)
    return new UsageProblem('--timeout goes only with requeue --kind consumer --follow');
  return {
    action,
    filter,
    json: values.json === true,
    dryRun: values['dry-run'] === true,
    note: (values['reason-note'] as string | undefined) ?? null,
    ...(by ? { by } : {}),
    ...(url ? { url } : {}),
    ...(followMs !== undefined ? { followMs } : {}),
  };
}

const line = (i: DeadLetterItem) =>
  [
    i.kind.padEnd(12),
    i.id,
    i.state.padEnd(9),
    i.deadAt.toISOString(),
    `tenant=${i.tenant ?? '-'}`,
    `ticket=${i.ticketId ?? '-'}`,
    i.eventType ?? '-',
    `attempts=${i.attempts ?? '-'}`,
    `(${i.where})`,
    `reason: ${i.reason}`,
  ].join('  ');

/** `dead-letters list|show|requeue|discard`: outbox dead letters, consumer dead letters and dead notifications (libs/dead-letters). */
export const deadLettersCli: CliCommand<DeadLettersArgs> = {
  name: 'dead-letters',
  summary: 'list, show, requeue or discard outbox dead letters, consumer dead letters and dead notifications',
  usage: [
    'dead-letters list [--kind <kind>] [--tenant <slug>] [--ticket <id>] [--group <group>] [--reason <text>] [--since 24h] [--until <time>] [--limit 50] [--all] [--json]',
    'dead-letters show --id <id> [--kind <kind>] [--json]',
    'dead-letters requeue --kind <kind> (--id <id> | <filters>) [--dry-run] [--reason-note "<why>"] [--by <who>] [--json]',
    'dead-letters requeue --kind consumer (--id <id> | <filters>) --follow [--timeout 30m] [--reason-note "<why>"] [--by <who>] [--json]',
    'dead-letters requeue --kind notification --id <id> --url <url> [--dry-run] [--reason-note "<why>"] [--by <who>]',
    'dead-letters discard --kind <kind> (--id <id> | <filters>) [--dry-run] [--reason-note "<why>"] [--by <who>] [--json]',
  ],
  details: [
    'Kinds: outbox = events the relay gave up on (outbox_dead_letters; the id is the event id); consumer = messages the',
    "consumer could not take (ticket_events.consumer_dead_letters, the kit's, as `ticket-events dead-letters`); notification = webhooks that failed for good (notifications, status dead).",
    'show: one dead letter with its content, attempts and history; a consumer one also with where its event is now (a',
    "  requeued one's copy: handled, dead-lettered again, or not read yet), the events of its ticket held behind it, and",
    '  the requeue to run next with its dry run (what it would produce, or the dead letter it waits behind).',
    'requeue, per kind (fix the cause first; requeue acts only on what is still dead, so running it twice does it once):',
    "  outbox: moves the ticket's earliest dead letter back into the outbox with its original seq and event id, together",
    '    with the later events dead-lettered behind it (blocked_by_dead_letter), in one transaction; the relay publishes',
    "    them in order after the ticket's earlier events. A later dead letter of a ticket is refused while an earlier one",
    '    is dead; an envelope that fails validation is refused (it would die again): discard it.',
    '  consumer: produces the stored message bytes again to its topic with the same key and headers; refused while they',
    '    still do not parse as a TicketEvent. Every consumer group reads it; a group that already has the event skips it.',
    "    Several go one at a time in the order they had in Kafka (topic, partition, offset), so a ticket's events keep",
    '    their order; with --limit, the first in that order. A ticket stays held until its group has handled the',
    '    copies: its events read before them are held behind them. --follow waits until the group has handled each copy',
    "    (or dead-lettered it again), showing progress, then requeues the ticket's events held behind the copies and",
    '    follows those too (exit 0 all handled, 1 one dead again or a requeue of the held events refused, 4 --timeout',
    '    passed; the requeue stands).',
    '  notification: back to pending, due now, same notification id (the webhook-id receivers dedup by); the attempt count',
    '    continues, so a requeue is one more attempt, and a retryable failure at NOTIFY_MAX_ATTEMPTS makes it dead again.',
    'discard keeps the row (outbox: in its audit row) and stops it from being sent; list hides it unless --all.',
    'Every requeue and discard is recorded in dead_letter_actions (consumer: ticket_events.dead_letter_actions) (who, when,',
    'why, what); --dry-run changes and records',
    'nothing. Exit codes: 0 done or nothing to do, 1 a dead letter was refused or something failed, 2 wrong usage.',
  ],
  positionals: [
    { name: 'list', description: 'the dead letters matching the filters, newest first' },
    {
      name: 'show',
      description: "one dead letter: its content, a notification's attempts, and every action taken on it",
    },
    { name: 'requeue', description: 'send it again (see above); with filters: every dead one matching them' },
    { name: 'discard', description: 'give up on it, keeping the row' },
  ],
  options: {
    kind: {
      type: 'string',
      value: '<kind>',
      description: 'outbox, consumer or notification (required for requeue and discard)',
      default: 'every kind',
    },
    id: {
      type: 'string',
      value: '<id>',
      description: 'one dead letter: the event id (outbox), dead letter id (consumer) or notification id',
      default: 'none',
    },
    tenant: {
      type: 'string',
      value: '<slug>',
      description: "only this tenant's (consumer: through the message key's ticket)",
      default: 'every tenant',
    },
    ticket: { type: 'string', value: '<id>', description: "only this ticket's", default: 'every ticket' },
    group: {
      type: 'string',
      value: '<group>',
      description: "only this consumer group's (consumer and notification dead letters; outbox ones have no group)",
      default: 'every group',
    },
    reason: {
      type: 'string',
      value: '<text>',
      description: 'only those whose reason (a notification: last error) contains this, any case',
      default: 'any reason',
    },
    since: {
      type: 'string',
      value: '<time|duration>',
      description: 'dead-lettered at or after this ISO-8601 time or this long ago (24h)',
      default: 'no bound',
    },
    until: {
      type: 'string',
      value: '<time|duration>',
      description: 'dead-lettered before this ISO-8601 time or this long ago',
      default: 'no bound',
    },
    limit: { type: 'string', value: '<n>', description: 'at most this many (1-1000)', default: '50' },
    all: { type: 'boolean', description: 'with list: also those already requeued or discarded', default: 'off' },
    'dry-run': {
      type: 'boolean',
      description: 'with requeue or discard: say what would happen, change and record nothing',
      default: 'off',
    },
    follow: {
      type: 'boolean',
      description: 'with requeue --kind consumer: wait until the group has handled the copies (see above)',
      default: 'off',
    },
    timeout: {
      type: 'string',
      value: '<duration>',
      description: 'with --follow: give up waiting after this long (exit 4)',
      default: '30m',
    },
    url: {
      type: 'string',
      value: '<url>',
      description: "with requeue --kind notification --id: send it to this URL, once, instead of the tenant's target",
      default: "the tenant's current target",
    },
    'reason-note': { type: 'string', value: '<why>', description: 'why, recorded in the audit row', default: 'none' },
    by: { type: 'string', value: '<who>', description: 'who, recorded in the audit row', default: 'the OS user' },
    json: {
      type: 'boolean',
      description: 'print JSON ({"items"}, the detail, or {"dryRun","results"})',
      default: 'off',
    },
  },
  validate,
  async run(args, { prisma, config, out, err }) {
    const republisher =
      args.action === 'requeue' && args.filter.kind === 'consumer'
        ? kafkaRepublisher(config.kafka.brokers, `${config.kafka.clientId}-dead-letters`)
        : undefined;
    const consumer = new ConsumerDeadLetters({ databaseUrl: config.database.url, republisher });
    const dl = new DeadLetters(prisma, consumer, { defaultWebhookUrl: config.notifier.webhookUrl });
    try {
      if (args.action === 'list') {
        const items = await dl.list(args.filter);
        if (args.json) out(JSON.stringify({ items }));
        else if (!items.length) out('dead-letters: none match');
        else for (const i of items) out(line(i));
        return 0;
      }
      if (args.action === 'show') {
        const detail = await dl.show(args.filter.id!, args.filter.kind);
        if (!detail) {
          out(
            args.json
              ? JSON.stringify(null)
              : `dead-letters: no dead letter ${args.filter.id}${args.filter.kind ? ` of kind ${args.filter.kind}` : ''}`,
          );
          return 1;
        }
        if (args.json) out(JSON.stringify(detail));
        else {
          out(line(detail.item));
          if (detail.consumer)
            for (const l of deadLetterFate(
              { ...detail.consumer, item: { ...detail.item, groupId: detail.consumer.groupId } },
              COMMANDS,
            ))
              out(l);
          out(`content:\n${JSON.stringify(detail.content, null, 2)}`);
          for (const a of detail.attempts ?? [])
            out(`attempt ${a.attemptNo} at ${a.at.toISOString()}: ${a.statusCode ?? '-'} ${a.error ?? ''}`.trimEnd());
          for (const h of detail.history)
            out(
              `${h.action} by ${h.actor} at ${h.at.toISOString()}${h.note ? ` (${h.note})` : ''}: ${JSON.stringify(h.detail)}`,
            );
        }
        return 0;
      }
      const req = {
        kind: args.filter.kind!,
        filter: args.filter,
        actor: { by: args.by ?? osUser(), note: args.note },
        dryRun: args.dryRun,
        url: args.url,
      };
      const results: ActionResult[] = args.action === 'requeue' ? await dl.requeue(req) : await dl.discard(req);
      if (!args.json && !results.length) out('dead-letters: none match; nothing done');
      else if (!args.json) for (const r of results) out(`${r.outcome}: ${r.message}`);
      if (args.followMs === undefined || !results.some((r) => r.outcome === 'requeued')) {
        if (args.json) out(JSON.stringify({ dryRun: args.dryRun, results }));
        return results.some((r) => r.outcome === 'refused') ? 1 : 0;
      }
      return await followRequeue(consumer, results, {
        timeoutMs: args.followMs,
        actor: req.actor,
        json: args.json,
        out,
        progress: args.json ? (l) => err(`${l}\n`) : out,
        commands: COMMANDS,
      });
    } finally {
      await republisher?.close();
      await consumer.close();
    }
  },
};
