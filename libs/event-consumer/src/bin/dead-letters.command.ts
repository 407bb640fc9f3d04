import { DUMMY_HOST, readConnectionUrl } from '../connection-string';
import { userInfo } from 'node:os';
import { ConsumerDeadLetters } from '../dead-letters/consumer-dead-letters';
import type {
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  KitActionResult,
} from '../dead-letters/consumer-dead-letters.types';
import { deadLetterFate, followRequeue, type FollowCommands } from '../dead-letters/follow-report';
import { kafkaRepublisher } from '../dead-letters/message-republisher';
import { shellQuoted } from '../shell-quoted';
import { BIN, EXIT, Usage, duration, target, timeBound, type Command, type Target, type Values } from './bin-support';

const ACTIONS = ['list', 'show', 'requeue', 'discard'] as const;
type Action = (typeof ACTIONS)[number];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const line = (i: ConsumerDeadLetterItem) =>
  [
    i.id,
    i.state.padEnd(9),
    i.deadAt.toISOString(),
    `ticket=${i.ticketId ?? '-'}`,
    i.eventType ?? '-',
    `(${i.where})`,
    i.cause === 'held' ? 'held' : i.cause === 'invalid' ? 'invalid' : 'failed',
    `reason: ${i.reason}`,
  ].join('  ');

/**
 * How this bin spells the commands its advice names, runnable where this run was: a requeue produces to Kafka,
 * so it names the brokers (this run's, or a placeholder when `show` ran without any), and the database and
 * schema given as flags are given again (every password as `<password>`: the advice is printed). Each value
 * is quoted for a POSIX shell where it needs it, so that a pasted command runs as printed.
 */
export function adviceCommands(values: Values, t: Pick<Target, 'brokers'>): FollowCommands {
  const flags: string[] = [];
  const url = values['database-url'];
  if (typeof url === 'string') flags.push(`--database-url ${shellQuoted(withoutPasswords(url))}`);
  if (typeof values.schema === 'string') flags.push(`--schema ${shellQuoted(values.schema)}`);
  const where = flags.map((f) => ` ${f}`).join('');
  const brokers = ` --brokers ${shellQuoted(t.brokers.length ? t.brokers.join(',') : '<host:9092>')}`;
  const q = shellQuoted;
  return {
    requeue: (id, g) => `${BIN} dead-letters requeue --group ${q(g)} --id ${q(id)} --follow${brokers}${where}`,
    list: (g, ticket) =>
      `${BIN} dead-letters list --group ${q(g)} --all${ticket ? ` --ticket ${q(ticket)}` : ''}${where}`,
  };
}

/** Query parameters pg reads a password from (libpq's names). */
const PASSWORD_PARAMS = ['password', 'sslpassword'];
const PLACEHOLDER = '<password>';

/** A connection string with every password (the URL's, and the password / sslpassword parameters) as `<password>`. */
export function withoutPasswords(url: string): string {
  if (url.startsWith('/')) return url; // "/socket/dir database": no password in it
  const read = readConnectionUrl(url);
  if (!read) return '<url>';
  const { u, dummy } = read;
  if (u.password) u.password = PLACEHOLDER;
  for (const p of PASSWORD_PARAMS) if (u.searchParams.has(p)) u.searchParams.set(p, PLACEHOLDER);
  const said = u.toString().replace(/%3Cpassword%3E/g, PLACEHOLDER);
  return dummy ? said.replace(`@${DUMMY_HOST}/`, '@/') : said;
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

export const deadLettersCommand: Command = {
  name: 'dead-letters',
  summary: 'list, show, requeue or discard the messages a consumer group dead-lettered',
  help: [
    'ticket-events dead-letters list --group <group> [--ticket <id>] [--reason <text>] [--since 24h] [--until <time>] [--limit 50] [--all] [--json]',
    'ticket-events dead-letters show --id <id> [--json]',
    'ticket-events dead-letters requeue --group <group> (--id <id> | <filters>) [--dry-run | --follow [--timeout 30m]] [--note "<why>"] [--by <who>] [--json]',
    'ticket-events dead-letters discard --group <group> (--id <id> | <filters>) [--dry-run] [--note "<why>"] [--by <who>] [--json]',
    '',
    "The group's dead letters: messages that did not parse as a ticket event, events whose handler",
    "failed every attempt, and the ticket's later events held behind such an event (not handled, so",
    'that they are not applied before it), kept as read in <schema>.consumer_dead_letters.',
    "  show     one dead letter with its message and history; where its event is now (a requeued one's copy:",
    '           handled, dead-lettered again, or not read yet), the events of its ticket held behind it, and',
    '           the requeue to run next with its dry run (what it would produce, or what it waits behind).',
    '  requeue  produces the stored bytes again to their topic with the same key and headers (fix the cause',
    '           first); refused while they still do not parse. Every group reads the copy; a group that',
    '           already applied the event skips it by its id. They go one at a time in the order they had',
    "           in Kafka (topic, partition, offset), so a ticket's events keep their order: a failed event",
    '           takes the events held behind it along, and a held event whose event ahead is still dead',
    "           is refused, naming that one. Until the group has handled the copies, the ticket's events it",
    '           reads before them are held behind them too: requeue the ticket again once they are handled,',
    '           or pass --follow, which does that.',
    '  discard  gives up on it; the row is kept, marked, and listed only with --all. The events held',
    '           behind it stay dead: requeue the first of them (the discard names it).',
    'Both act only on what is still dead (a second run says so) and write an audit row',
    '(<schema>.dead_letter_actions: who, when, why, what) in the same transaction; --dry-run changes nothing.',
    '',
    '  --group <group>        the consumer group (required, except for show)',
    '  --id <id>              one dead letter',
    '  --ticket <id>          only those whose message key is this ticket',
    '  --reason <text>        only those whose reason contains this, any case',
    '  --since, --until       an ISO-8601 time or a duration back from now (24h, 7d)',
    '  --limit <n>            at most this many, 1-1000 (default 50): list and discard the newest, requeue the first',
    '                         in Kafka order (topic, partition, offset: of each partition the earliest), each',
    '                         with the events held behind it',
    '  --all                  with list: also those already requeued or discarded',
    '  --dry-run              with requeue or discard: say what would happen',
    '  --follow               with requeue: wait until the group has handled each copy (or dead-lettered it again),',
    "                         showing progress; then requeue the ticket's events it held behind the copies meanwhile",
    '                         and follow those too. Exit 0 when every copy is handled, 1 when one is dead again',
    '                         or a requeue of the held events is refused',
    '  --timeout <duration>   with --follow: give up after this long (default 30m, exit 4); the requeue stands',
    '  --note <why>, --by <who>  recorded in the audit row (default --by: the OS user)',
    '  --json                 print JSON',
    'Exit codes: 0 done or nothing to do, 1 a dead letter was refused, dead again or something failed, 2 wrong usage,',
    '4 --follow timed out.',
  ],
  options: {
    group: { type: 'string' },
    id: { type: 'string' },
    ticket: { type: 'string' },
    reason: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    all: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    follow: { type: 'boolean' },
    timeout: { type: 'string' },
    note: { type: 'string' },
    by: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run(values, positionals, io) {
    const [action, ...extra] = positionals as [Action, ...string[]];
    if (!ACTIONS.includes(action) || extra.length)
      throw new Usage(
        `the action is one of ${ACTIONS.join(', ')}${positionals.length ? `, not "${positionals.join(' ')}"` : ''}`,
      );
    for (const name of ['id', 'ticket'] as const) {
      const v = values[name];
      if (typeof v === 'string' && !UUID.test(v)) throw new Usage(`--${name} must be a uuid, got "${v}"`);
    }
    const group = values.group as string | undefined;
    if (action === 'show' && !values.id) throw new Usage('show needs --id <id> (the id in the first column of list)');
    if (action !== 'show' && !group)
      throw new Usage(`${action} needs --group <group>: the consumer group whose dead letters to ${action}`);
    const selected = ['id', 'ticket', 'reason', 'since', 'until'].some((n) => values[n] !== undefined);
    if ((action === 'requeue' || action === 'discard') && !selected)
      throw new Usage(
        `${action} needs --id <id>, or at least one of --ticket, --reason, --since, --until to choose the dead letters`,
      );
    const follow = values.follow === true;
    if (follow && action !== 'requeue') throw new Usage('--follow goes only with requeue');
    if (follow && values['dry-run'] === true)
      throw new Usage('--follow follows copies a requeue produced: not with --dry-run');
    if (values.timeout !== undefined && !follow) throw new Usage('--timeout goes only with requeue --follow');
    const timeoutMs = follow ? duration((values.timeout as string | undefined) ?? '30m', '--timeout') : 0;
    const limit = values.limit === undefined ? 50 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new Usage(`--limit must be a whole number from 1 to 1000, got "${values.limit}"`);
    const filter: ConsumerDeadLetterFilter = {
      groupId: group,
      id: values.id as string | undefined,
      ticket: values.ticket as string | undefined,
      reason: values.reason as string | undefined,
      since: values.since === undefined ? undefined : timeBound(values.since as string, '--since'),
      until: values.until === undefined ? undefined : timeBound(values.until as string, '--until'),
      limit,
      all: values.all === true,
    };
    const t = target(values, { database: true, brokers: action === 'requeue' && values['dry-run'] !== true });
    const republisher = action === 'requeue' ? kafkaRepublisher(t.brokers, `${BIN}-dead-letters`) : undefined;
    const dl = new ConsumerDeadLetters({ databaseUrl: t.databaseUrl, schema: t.schema, republisher });
    const json = values.json === true;
    const commands = adviceCommands(values, t);
    try {
      if (action === 'list') {
        const items = await dl.list(filter);
        if (json) io.out(JSON.stringify({ items }));
        else if (!items.length) io.out(`dead-letters: none match for group ${group}`);
        else for (const i of items) io.out(line(i));
        return EXIT.ok;
      }
      if (action === 'show') {
        const d = await dl.show(filter.id!);
        if (!d) {
          io.out(json ? 'null' : `dead-letters: no dead letter ${filter.id}`);
          return EXIT.failed;
        }
        if (json) io.out(JSON.stringify(d));
        else {
          io.out(line(d.item));
          for (const l of deadLetterFate(d, commands)) io.out(l);
          io.out(`content: ${JSON.stringify(d.content)}`);
          for (const h of d.history)
            io.out(
              `${h.action} by ${h.actor} at ${h.at.toISOString()}${h.note ? ` (${h.note})` : ''}: ${JSON.stringify(h.detail)}`,
            );
        }
        return EXIT.ok;
      }
      const req = {
        filter,
        actor: { by: (values.by as string | undefined) ?? osUser(), note: (values.note as string | undefined) ?? null },
        dryRun: values['dry-run'] === true,
      };
      const results: KitActionResult[] = action === 'requeue' ? await dl.requeue(req) : await dl.discard(req);
      if (!json && !results.length) io.out('dead-letters: none match; nothing done');
      else if (!json) for (const r of results) io.out(`${r.outcome}: ${r.message}`);
      if (!follow || !results.some((r) => r.outcome === 'requeued')) {
        if (json) io.out(JSON.stringify({ dryRun: req.dryRun, results }));
        return results.some((r) => r.outcome === 'refused') ? EXIT.failed : EXIT.ok;
      }
      return await followRequeue(dl, results, {
        timeoutMs,
        actor: req.actor,
        json,
        out: io.out,
        progress: json ? io.err : io.out,
        commands,
      });
    } finally {
      await republisher?.close();
      await dl.close();
    }
  },
};
