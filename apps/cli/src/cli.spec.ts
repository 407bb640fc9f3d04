import type { AppConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { apiKeysCli } from './api-keys.command';
import { runCli, type CliIo } from './cli';
import { commandHelp, parseCommandLine, type CliContext } from './command-line';
import { deadLettersCli } from './dead-letters.command';
import { purgeCli } from './purge.command';
import { reconcileCli } from './reconcile.command';
import { replayCli } from './replay.command';
import { webhooksCli } from './webhooks.command';

const created: string[] = [];
const commands = [
  apiKeysCli({
    create: async (_prisma, slug) => {
      created.push(slug);
      return {
        tenant: slug,
        tenantId: 'tenant-id',
        keyId: 'key-id',
        prefix: 'tk_secret',
        apiKey: 'tk_secret',
        revoked: [],
      };
    },
    list: async () => [],
    revoke: async () => ({ outcome: 'not-found' }),
    rotate: async () => ({ outcome: 'not-found' }),
  }),
  purgeCli(async (_prisma, onProgress) => {
    onProgress({ keysDeleted: 2, responsesCleared: 0 });
    return { keysDeleted: 2, responsesCleared: 5 };
  }),
  reconcileCli,
  webhooksCli,
  replayCli,
  deadLettersCli,
];

/** An io whose database is never expected: `open` records that it was called. */
function fakeIo() {
  const out: string[] = [];
  const err: string[] = [];
  let opened = 0;
  const ctx: CliContext = {
    prisma: {} as PrismaClient,
    config: { notifier: { groupId: 'ticket-notifier' }, kafka: { topic: 'ticket-events' } } as AppConfig,
    out: (l) => out.push(l),
    err: (t) => err.push(t),
  };
  const io: CliIo = {
    out: (l) => out.push(l),
    err: (t) => err.push(t),
    open: async () => {
      opened++;
      return { ctx, close: async () => undefined };
    },
  };
  return { io, out, err, opened: () => opened };
}

const cli = async (...argv: string[]) => {
  const f = fakeIo();
  const code = await runCli(argv, commands, f.io);
  return { code, out: f.out.join('\n'), err: f.err.join(''), opened: f.opened() };
};

const argsOf = <A>(command: { name: string } & Parameters<typeof parseCommandLine<A>>[0], ...argv: string[]) => {
  const parsed = parseCommandLine(command, argv);
  if (parsed.kind !== 'args') throw new Error(`expected arguments, got ${JSON.stringify(parsed)}`);
  return parsed.args;
};

describe('cli --help', () => {
  it('lists every command with its summary, without configuration or database', async () => {
    const r = await cli('--help');
    expect(r).toMatchObject({ code: 0, opened: 0, err: '' });
    for (const c of commands)
      expect(r.out).toMatch(new RegExp(`^  ${c.name}\\s+${c.summary.slice(0, 20).replace(/[()]/g, '.')}`, 'm'));
    expect(r.out).toContain('npm run cli -- <command> --help');
  });

  it.each(commands.map((c) => [c.name]))(
    '%s --help prints its usage and every option with meaning and default',
    async (name) => {
      const command = commands.find((c) => c.name === name)!;
      const r = await cli(name, '--help');
      expect(r).toMatchObject({ code: 0, opened: 0, err: '' });
      expect(r.out).toBe(commandHelp(command));
      expect(r.out.split('\n')[0]).toBe(`usage: npm run cli -- ${command.usage[0]}`);
      for (const [option, spec] of Object.entries(command.options)) {
        const line = r.out.split('\n').find((l) => l.startsWith(`  --${option}`));
        expect(line).toContain(spec.description);
        expect(line).toMatch(
          spec.required
            ? /\(required\)$/
            : new RegExp(`\\(default: ${(spec.default ?? 'none').replace(/[()|]/g, '.')}\\)$`),
        );
      }
      expect(r.out).toMatch(/^ {2}-h, --help\s+show this help/m);
      expect(await cli(name, '-h')).toMatchObject({ code: 0, out: r.out });
    },
  );

  it('shows the defaults operators rely on', async () => {
    expect((await cli('reconcile', '--help')).out).toMatch(
      /--since <duration>.*\(default: 24h\)\n.*--grace <duration>.*\(default: 5m\)/,
    );
    expect((await cli('replay', '--help')).out).toMatch(/--timeout <duration>.*\(default: 30m\)/);
    expect((await cli('replay', '--help')).out).toMatch(
      /--topic <topic>.*\(default: TICKET_EVENTS_TOPIC, ticket-events\)/,
    );
    expect((await cli('help', 'webhooks')).out).toBe(commandHelp(webhooksCli));
  });

  it('api-keys --help shows list, revoke and rotate, and the cut-over default', async () => {
    const help = (await cli('api-keys', '--help')).out;
    for (const action of ['create', 'list', 'revoke', 'rotate'])
      expect(help).toMatch(new RegExp(`npm run cli -- api-keys ${action} `));
    expect(help).toMatch(/--until <time\|duration>.*\(default: 24h\)/);
    expect((await cli('--help')).out).toMatch(/api-keys\s+create, list, revoke or rotate/);
  });
});

describe('cli usage errors: exit 2, naming the problem and pointing to --help, before any database', () => {
  it.each([
    [['reconcile', '--bogus'], /cli reconcile: unknown option --bogus\nRun `npm run cli -- reconcile --help`/],
    [['replay', '--group', 'g', '--from', 'earliest', '--form', 'x'], /cli replay: unknown option --form\n/],
    [['api-keys', 'create', '--tenant'], /cli api-keys: --tenant needs a value: --tenant <slug>\n/],
    [['webhooks', 'show', '--tenant', '--url', 'x'], /cli webhooks: --tenant needs a value/],
    [['reconcile', '--json=yes'], /cli reconcile: --json takes no value\n/],
    [['purge', 'now'], /cli purge: unexpected argument "now": this command takes only options\n/],
    [
      ['api-keys', '--tenant', 'acme'],
      /cli api-keys: the action is one of create, list, revoke, rotate, e\.g\. `api-keys create --tenant acme`\n/,
    ],
    [['api-keys', 'delete', '--tenant', 'acme'], /the action is one of create, list, revoke, rotate.*, not "delete"/],
    [['api-keys', 'create'], /--tenant <slug> is required/],
    [['api-keys', 'revoke'], /revoke needs --key <id\|prefix>/],
    [['api-keys', 'rotate', '--key', 'tk_abc', '--until', 'soon'], /--until: "soon" is neither an ISO-8601 time/],
    [
      ['api-keys', 'rotate', '--key', 'tk_abc', '--until', '2020-01-01T00:00:00Z'],
      /--until: 2020-01-01T00:00:00Z has passed/,
    ],
    [
      ['api-keys', 'rotate', '--key', 'tk_abc', '--until', '2h', '--expires', '1h'],
      /--expires \(of the new key\) must be later than --until/,
    ],
    [['api-keys', 'revoke', '--key', 'tk_abc', '--tenant', 'acme'], /--tenant goes only with create or list/],
    [['api-keys', 'list', '--until', '1h'], /--until goes only with rotate/],
    [
      ['webhooks', 'set', '--tenant', 'acme', '--url', 'https://x.test'],
      /webhooks set needs both --url and --secret-file \(missing --secret-file <path>, or --secret-file - to read stdin\)/,
    ],
    [
      ['webhooks', 'set', '--tenant', 'acme', '--url', 'ftp://x.test', '--secret-file', '/dev/null'],
      /--url must be an http\(s\) URL, got ftp:/,
    ],
    [
      ['webhooks', 'set', '--tenant', 'acme', '--url', 'https://x.test', '--secret', 'a-long-enough-secret'],
      /--secret is not taken: a secret on the command line shows in the process list and the shell history/,
    ],
    [
      [
        'dead-letters',
        'requeue',
        '--kind',
        'outbox',
        '--id',
        '0b4f9f47-3c55-4c8e-9a53-6f0a1d1e2b3c',
        '--url',
        'https://x.test',
      ],
      /--url goes only with requeue --kind notification --id <id>/,
    ],
    [['webhooks', 'show', '--tenant', 'acme', '--url', 'https://x.test'], /--url goes only with set/],
    [['webhooks', 'rotate', '--tenant', 'acme'], /the action is one of set, show, clear, reencrypt, not "rotate"/],
    [['reconcile', '--since', 'yesterday'], /--since: "yesterday" is not a duration/],
    [['replay', '--from', 'earliest'], /--group <group> is required/],
    [['replay', '--group', 'g'], /--from is required \(or --follow to follow the latest replay\)/],
    [
      ['replay', '--group', 'g', '--from', 'last tuesday'],
      /--from must be "earliest" or an ISO-8601 time such as 2026-11-30T08:00:00Z, got "last tuesday"/,
    ],
    [['replay', '--group', 'g', '--from', '2026-13-45T00:00:00Z'], /--from must be "earliest" or an ISO-8601 time/],
    [['replay', '--group', 'g', '--follow', '--timeout', 'soon'], /--timeout: "soon" is not a duration/],
    [
      ['replay', '--group', 'g', '--from', 'earliest', '--partition', 'two'],
      /--partition must be a partition number \(0, 1, \.\.\.\), got "two"/,
    ],
    [['replay', '--group', 'g', '--from', 'earliest', '--partition', '1.5'], /--partition must be a partition number/],
    [['dead-letters'], /the action is one of list, show, requeue, discard\n/],
    [['dead-letters', 'retry', '--kind', 'outbox'], /the action is one of list, show, requeue, discard, not "retry"/],
    [['dead-letters', 'list', '--kind', 'kafka'], /--kind is one of outbox, consumer, notification, not "kafka"/],
    [
      ['dead-letters', 'requeue', '--id', '0b5f3f8e-8a43-4e3a-9d8e-1f2a3b4c5d6e'],
      /requeue needs --kind outbox\|consumer\|notification/,
    ],
    [
      ['dead-letters', 'requeue', '--kind', 'notification'],
      /requeue needs --id <id>, or at least one of --tenant, --ticket, --group, --reason, --since, --until/,
    ],
    [
      ['dead-letters', 'requeue', '--kind', 'outbox', '--group', 'ticket-notifier'],
      /--group goes with --kind consumer or notification: outbox dead letters belong to no consumer group/,
    ],
    [['dead-letters', 'list', '--group', ' '], /--group must name a consumer group/],
    [
      ['dead-letters', 'requeue', '--kind', 'consumer', '--id', '0b5f3f8e-8a43-4e3a-9d8e-1f2a3b4c5d6e', '--group', 'g'],
      /--id names one dead letter; --group would not narrow it/,
    ],
    [
      ['dead-letters', 'show', '--id', '0b5f3f8e-8a43-4e3a-9d8e-1f2a3b4c5d6e', '--group', 'g'],
      /--group goes only with list or requeue or discard/,
    ],
    [['dead-letters', 'discard', '--kind', 'outbox', '--id', '42'], /--id must be a uuid, got "42"/],
    [['dead-letters', 'show'], /show needs --id <id>/],
    [['dead-letters', 'list', '--dry-run'], /--dry-run goes only with requeue or discard/],
    [['dead-letters', 'list', '--by', 'me'], /--by goes only with requeue or discard/],
    [['dead-letters', 'requeue', '--kind', 'outbox', '--tenant', 'acme', '--all'], /--all goes only with list/],
    [['dead-letters', 'list', '--since', 'last week'], /--since: "last week" is neither an ISO-8601 time/],
    [['dead-letters', 'list', '--limit', '0'], /--limit must be a whole number from 1 to 1000, got "0"/],
    [['dead-letters', 'requeue', '--kind', 'notification', '--tenant', 'acme', '--by', ' '], /--by must name someone/],
  ])('%j', async (argv, message) => {
    const r = await cli(...argv);
    expect(r).toMatchObject({ code: 2, opened: 0, out: '' });
    expect(r.err).toMatch(message);
    expect(r.err).toMatch(new RegExp(`Run \`npm run cli -- ${argv[0]} --help\` for its usage and options\\.\\n$`));
  });

  it('an unknown or missing command lists the commands and points to --help', async () => {
    for (const argv of [['replay-topic'], [], ['--tenant', 'x']]) {
      const r = await cli(...argv);
      expect(r).toMatchObject({ code: 2, opened: 0 });
      expect(r.err).toContain(
        'the commands are api-keys, purge, reconcile, webhooks, replay, dead-letters.\nRun `npm run cli -- --help`',
      );
    }
    expect((await cli('replay-topic')).err).toMatch(/^cli: unknown command "replay-topic"/);
    expect((await cli('--tenant')).err).toMatch(/^cli: unknown option --tenant \(options go after the command\)/);
  });
});

describe('cli arguments', () => {
  it('reconcile: durations, group and tenant, with their defaults', () => {
    expect(argsOf(reconcileCli)).toEqual({
      sinceMs: 86_400_000,
      graceMs: 300_000,
      group: undefined,
      tenant: null,
      json: false,
    });
    expect(
      argsOf(reconcileCli, '--since', '7d', '--grace', '30s', '--group', 'g', '--tenant', 'acme', '--json'),
    ).toEqual({
      sinceMs: 7 * 86_400_000,
      graceMs: 30_000,
      group: 'g',
      tenant: 'acme',
      json: true,
    });
    expect(argsOf(reconcileCli, '--tenant=acme').tenant).toBe('acme');
  });

  it('replay: from earliest or a time, pause by default or --no-pause, wait, follow, timeout', () => {
    expect(argsOf(replayCli, '--group', 'g', '--from', 'earliest')).toEqual({
      group: 'g',
      topic: undefined,
      from: 'earliest',
      partition: undefined,
      newGroup: false,
      pause: true,
      wait: false,
      follow: false,
      timeoutMs: 1_800_000,
    });
    expect(
      argsOf(
        replayCli,
        '--group',
        'g',
        '--topic',
        't',
        '--from',
        '2026-11-30T08:00:00+01:00',
        '--no-pause',
        '--wait',
        '--follow',
        '--timeout',
        '60s',
      ),
    ).toEqual({
      group: 'g',
      topic: 't',
      from: '2026-11-30T08:00:00+01:00',
      partition: undefined,
      newGroup: false,
      pause: false,
      wait: true,
      follow: true,
      timeoutMs: 60_000,
    });
    expect(argsOf(replayCli, '--group', 'g', '--follow').from).toBeUndefined();
    expect(argsOf(replayCli, '--group', 'g', '--from', '2026-11-30').from).toBe('2026-11-30');
    expect(argsOf(replayCli, '--group', 'g', '--from', 'earliest', '--partition', '3').partition).toBe(3);
    expect(argsOf(replayCli, '--group', 'g', '--from', 'earliest').partition).toBeUndefined();
    expect(argsOf(replayCli, '--group', 'g', '--from', 'earliest', '--new-group').newGroup).toBe(true);
    expect(parseCommandLine(replayCli, ['--group', 'g', '--follow', '--new-group'])).toEqual({
      kind: 'usage',
      message: expect.stringContaining('--new-group goes only with --from'),
    });
  });

  it('webhooks: set with url and a secret file, show and clear with the tenant only, reencrypt with or without one', () => {
    expect(argsOf(webhooksCli, 'set', '--tenant', 'acme', '--url', 'https://x.test/h', '--secret-file', '-')).toEqual({
      action: 'set',
      tenant: 'acme',
      url: 'https://x.test/h',
      secretFile: '-',
    });
    expect(argsOf(webhooksCli, 'clear', '--tenant', 'acme')).toEqual({ action: 'clear', tenant: 'acme' });
    expect(argsOf(webhooksCli, '--tenant', 'acme', 'show')).toEqual({ action: 'show', tenant: 'acme' });
    expect(argsOf(webhooksCli, 'reencrypt')).toEqual({ action: 'reencrypt' });
    expect(argsOf(webhooksCli, 'reencrypt', '--tenant', 'acme')).toEqual({ action: 'reencrypt', tenant: 'acme' });
  });

  it('dead-letters: filters, times, limit, dry run and the audit fields', () => {
    const id = '0b5f3f8e-8a43-4e3a-9d8e-1f2a3b4c5d6e';
    expect(argsOf(deadLettersCli, 'list')).toEqual({
      action: 'list',
      filter: { kind: undefined, id: undefined, limit: 50, all: false },
      json: false,
      dryRun: false,
      note: null,
    });
    const before = Date.now();
    const listed = argsOf(
      deadLettersCli,
      'list',
      '--kind',
      'consumer',
      '--tenant',
      'acme',
      '--ticket',
      id,
      '--group',
      'ticket-stats',
      '--reason',
      'too large',
      '--since',
      '24h',
      '--until',
      '2026-11-30T08:00:00Z',
      '--limit',
      '7',
      '--all',
      '--json',
    );
    expect(listed).toMatchObject({
      action: 'list',
      json: true,
      filter: {
        kind: 'consumer',
        tenant: 'acme',
        ticket: id,
        group: 'ticket-stats',
        reason: 'too large',
        limit: 7,
        all: true,
        until: new Date('2026-11-30T08:00:00Z'),
      },
    });
    expect(listed.filter.since!.getTime()).toBeGreaterThanOrEqual(before - 86_400_000);
    expect(listed.filter.since!.getTime()).toBeLessThanOrEqual(Date.now() - 86_400_000);
    expect(
      argsOf(
        deadLettersCli,
        'requeue',
        '--kind',
        'notification',
        '--id',
        id,
        '--dry-run',
        '--reason-note',
        'receiver fixed',
        '--by',
        'ana',
      ),
    ).toEqual({
      action: 'requeue',
      filter: { kind: 'notification', id, limit: 50, all: false },
      json: false,
      dryRun: true,
      note: 'receiver fixed',
      by: 'ana',
    });
    expect(argsOf(deadLettersCli, 'discard', '--kind', 'outbox', '--tenant', 'acme')).toMatchObject({
      action: 'discard',
      filter: { kind: 'outbox', tenant: 'acme' },
    });
    expect(argsOf(deadLettersCli, 'show', '--id', id).filter.id).toBe(id);
  });

  it('api-keys and purge run with the functions they are given', async () => {
    const keys = await cli('api-keys', 'create', '--tenant', 'acme', '--json');
    expect(keys).toMatchObject({ code: 0, opened: 1 });
    expect(JSON.parse(keys.out)).toEqual({
      tenant: 'acme',
      apiKey: 'tk_secret',
      keyId: 'key-id',
      prefix: 'tk_secret',
      expiresAt: null,
      revoked: [],
    });
    expect(created).toEqual(['acme']);
    const purge = await cli('purge');
    expect(purge).toMatchObject({ code: 0, opened: 1, out: '{"keysDeleted":2,"responsesCleared":5}' });
    expect(purge.err).toBe('\rpurge: 2 expired keys deleted, 0 stored responses cleared\n');
  });
});
