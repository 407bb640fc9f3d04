// The public packages as their users get them: `npm pack` tarballs installed into the example projects
// (examples/*, outside the workspaces) copied to a temporary folder outside the checkout, then run
// against the real API, PostgreSQL and Kafka.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Message, Producer } from 'kafkajs';
import { Pool } from 'pg';
import * as ts from 'typescript';
import { checkLinks, formatBrokenLink } from '../../scripts/doc-links';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, testKafka, uniqueName } from '../support/events-factory';
import { scratchDatabase, type ScratchDatabase } from '../support/kit-databases';
import { copyExample, npmInstall, packPublicPackages, run } from '../support/packed';
import { createTenant, post, ROOT, startApiProcess, type TestTenant } from '../support/stack';

const NODE16: ts.CompilerOptions = { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 };

let packDir: string;
let tarballs: Record<string, string>;

beforeAll(async () => {
  packDir = mkdtempSync(join(tmpdir(), 'tickets-packages-'));
  tarballs = await packPublicPackages(packDir);
}, 600_000);
afterAll(() => rmSync(packDir, { recursive: true, force: true }));

it('packs the four public packages, and no tarball carries the service, its tests or build state', async () => {
  expect(Object.keys(tarballs).sort()).toEqual([
    '@tickets/agent-client',
    '@tickets/contracts',
    '@tickets/event-consumer',
    '@tickets/mcp-server',
  ]);
  for (const [name, tgz] of Object.entries(tarballs)) {
    const { stdout } = await run('tar', ['tzf', tgz], { cwd: packDir });
    const files = stdout.split('\n').filter(Boolean);
    expect({
      name,
      files: files.filter((f) => /\.spec\.|\.fake\.|tsbuildinfo|prisma|\/src\/|\/test\/|README\.md./.test(f)),
    }).toEqual({ name, files: [] });
    expect(files).toEqual(expect.arrayContaining(['package/package.json', 'package/README.md', 'package/LICENSE']));
  }
});

it('ships the guides its README links to, and every link in a tarball resolves with the four unpacked side by side', async () => {
  // Unpacked as npm installs them: node_modules/@tickets/<name>/, side by side.
  const scope = join(packDir, 'unpacked', '@tickets');
  const pages = new Map<string, string>();
  for (const [name, tgz] of Object.entries(tarballs)) {
    const dir = join(scope, name.replace('@tickets/', ''));
    mkdirSync(dir, { recursive: true });
    expect((await run('tar', ['xzf', tgz, '-C', dir, '--strip-components=1'], { cwd: packDir })).code).toBe(0);
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory() && e.name !== 'node_modules') walk(join(d, e.name));
        else if (e.name.endsWith('.md'))
          pages.set(relative(scope, join(d, e.name)), readFileSync(join(d, e.name), 'utf8'));
      }
    };
    walk(dir);
  }
  expect([...pages.keys()].filter((p) => p.includes('/docs/')).sort()).toEqual([
    'event-consumer/docs/consuming.md',
    'event-consumer/docs/replay.md',
    'mcp-server/docs/mcp.md',
  ]);
  // Sections about this checkout (its npm scripts and tests) stay in the repository's copy only.
  const repositoryGuide = readFileSync(join(ROOT, 'docs', 'consuming.md'), 'utf8');
  expect(repositoryGuide).toContain('## In this repository: the statistics projection');
  expect(repositoryGuide).toContain('<!-- repository-only -->');
  const shippedGuide = pages.get('event-consumer/docs/consuming.md') ?? '';
  expect(shippedGuide).toContain('## Entry points');
  for (const [page, text] of pages) {
    expect({
      page,
      leftover: /repository-only|^## In this repository|^## Tests and benchmark|^## Build and test/m.exec(text)?.[0],
    }).toEqual({ page, leftover: undefined });
  }
  // The READMEs lose theirs in the tarball only: the checkout keeps its build-and-test section.
  expect(readFileSync(join(ROOT, 'libs', 'agent-client', 'README.md'), 'utf8')).toMatch(
    /<!-- repository-only -->\n## Build and test/,
  );
  expect(pages.get('agent-client/README.md')).toContain('## Circuit breaker policy');
  const { broken } = checkLinks(
    pages,
    (path) => existsSync(join(scope, path)),
    (path) => readFileSync(join(scope, path), 'utf8'),
  );
  expect(broken.map(formatBrokenLink)).toEqual([]);
  // The pack left the checkout as it was: the READMEs link into the repository's docs/ again.
  for (const pkg of ['event-consumer', 'mcp-server']) {
    expect(readFileSync(join(ROOT, 'libs', pkg, 'README.md'), 'utf8')).toContain('](../../docs/');
    expect(existsSync(join(ROOT, 'libs', pkg, 'docs'))).toBe(false);
    expect(existsSync(join(ROOT, '.tmp', 'package-docs', 'libs', pkg))).toBe(false);
  }
});

it('declares, for every package its type declarations import, the package and where its types come from', async () => {
  // A user's tsc reads the .d.ts files; with skipLibCheck (tsc --init's default) a missing declaration turns
  // the kit's `ctx.tx` into `any` without a word, and without it the build fails on a module with no types.
  const dir = mkdtempSync(join(packDir, 'types-'));
  const missing: string[] = [];
  for (const [name, tgz] of Object.entries(tarballs)) {
    const pkgDir = join(dir, name.replace('@tickets/', ''));
    mkdirSync(pkgDir);
    expect((await run('tar', ['xzf', tgz, '-C', pkgDir, '--strip-components=1'], { cwd: packDir })).code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    const declared = new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const imported = new Map<string, string>(); // package -> one specifier that imports it
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (e.name.endsWith('.d.ts')) {
          // As tsc reads them: imports, exports from, import("...") types and /// <reference types>.
          const info = ts.preProcessFile(readFileSync(join(d, e.name), 'utf8'), true, true);
          for (const { fileName: specifier } of [...info.importedFiles, ...info.typeReferenceDirectives]) {
            if (specifier.startsWith('.')) continue;
            const parts = specifier.split('/');
            const pkg = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
            if (!pkg.startsWith('node:') && !builtinModules.includes(pkg) && pkg !== 'node' && pkg !== name)
              imported.set(pkg, specifier);
          }
        }
      }
    };
    walk(join(pkgDir, 'dist'));
    for (const [pkg, specifier] of imported) {
      if (!declared.has(pkg)) {
        missing.push(`${name}: imports ${pkg}, not in its dependencies or peerDependencies`);
        continue;
      }
      if (pkg.startsWith('@tickets/')) continue; // the four ship their declarations (the test above unpacks them)
      // Where tsc finds the declarations, resolving from the workspace's node_modules as a user's project would.
      const found = ts.resolveModuleName(specifier, join(ROOT, 'index.ts'), NODE16, ts.sys).resolvedModule;
      const typesPkg = `@types/${pkg.replace(/^@/, '').replace('/', '__')}`;
      if (!found || !/\.d\.[cm]?ts$/.test(found.resolvedFileName))
        missing.push(`${name}: imports ${specifier}, for which tsc finds no declarations`);
      else if (found.resolvedFileName.includes(`/node_modules/${typesPkg}/`) && !declared.has(typesPkg))
        missing.push(`${name}: imports ${pkg}, whose types are ${typesPkg}, not in its dependencies`);
    }
  }
  expect(missing).toEqual([]);
});

describe('examples/agent: the agent client from its tarball', () => {
  let example: { dir: string; cleanup(): void };
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let tenant: TestTenant;

  beforeAll(async () => {
    example = copyExample('agent');
    await npmInstall(example.dir, [tarballs['@tickets/agent-client']]);
    tenant = await createTenant('pkg-agent');
    api = await startApiProcess();
  }, 600_000);
  afterAll(async () => {
    await api?.stop();
    example?.cleanup();
  });

  it('compiles under strict and gives one ticket per intent, across runs of the agent', async () => {
    const build = await run('npm', ['run', 'build'], { cwd: example.dir });
    expect({ code: build.code, output: build.code === 0 ? '' : build.stdout + build.stderr }).toEqual({
      code: 0,
      output: '',
    });
    const env = { TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey };
    const intent = `pkg-${Date.now()}`;
    const first = await run(process.execPath, ['dist/agent.js', intent], { cwd: example.dir, env });
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toMatchObject({
      first: 'created',
      again: 'replayed',
      sameTicket: true,
      cancel: 'cancelled',
      cancelAgain: 'replayed',
      status: 'cancelled',
    });
    // A second run of the agent (a restart after a crash) with the same intent: the same ticket.
    const second = await run(process.execPath, ['dist/agent.js', intent], { cwd: example.dir, env });
    expect(JSON.parse(second.stdout)).toMatchObject({
      ticketId: JSON.parse(first.stdout).ticketId,
      first: 'replayed',
      cancel: 'replayed',
    });
  });

  it('reads TICKETS_KEY_STORE as the MCP server does: ~/ is the home folder, another relative path is refused', async () => {
    const env = { TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey };
    const intent = `pkg-store-${Date.now()}`;
    if (!existsSync(join(example.dir, 'dist', 'agent.js'))) await run('npm', ['run', 'build'], { cwd: example.dir });
    const relativeStore = await run(process.execPath, ['dist/agent.js', intent], {
      cwd: example.dir,
      env: { ...env, TICKETS_KEY_STORE: 'keys.json' },
    });
    expect({ code: relativeStore.code, stdout: relativeStore.stdout }).toEqual({ code: 1, stdout: '' });
    expect(relativeStore.stderr).toMatch(/^TICKETS_KEY_STORE must be an absolute path .*; give an absolute path\n$/);
    const home = join(example.dir, 'home');
    const inHome = await run(process.execPath, ['dist/agent.js', intent], {
      cwd: example.dir,
      env: { ...env, HOME: home, TICKETS_KEY_STORE: '~/.tickets-agent/keys.json' },
    });
    expect(JSON.parse(inHome.stdout)).toMatchObject({ first: 'created', again: 'replayed' });
    expect(existsSync(join(home, '.tickets-agent', 'keys.json'))).toBe(true);
    expect(existsSync(join(example.dir, '~'))).toBe(false);
  });
});

describe('tickets-mcp from its tarball', () => {
  let dir: string;
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let tenant: TestTenant;
  let mcp: Client | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickets-mcp-host-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'agent-host', private: true }));
    // As `npx -y @tickets/mcp-server` installs it: the package and what it depends on, nothing else.
    await npmInstall(dir, [tarballs['@tickets/mcp-server'], tarballs['@tickets/agent-client']]);
    tenant = await createTenant('pkg-mcp');
    api = await startApiProcess();
  }, 600_000);
  afterAll(async () => {
    await mcp?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves an MCP client on stdio from the installed bin, one ticket per intent_id', async () => {
    const bin = join(dir, 'node_modules', '.bin', 'tickets-mcp');
    expect(existsSync(bin)).toBe(true);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [realpathSync(bin)],
      cwd: dir,
      env: {
        ...getDefaultEnvironment(),
        TICKETS_API_URL: api.baseUrl,
        TICKETS_API_KEY: tenant.apiKey,
        TICKETS_KEY_STORE: join(dir, 'keys.json'),
        LOG_LEVEL: 'warn',
      },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', () => undefined);
    mcp = new Client({ name: 'packages-e2e', version: '1.0.0' });
    await mcp.connect(transport);
    const tools = (await mcp.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(['create_ticket', 'get_ticket', 'find_ticket', 'cancel_ticket']));
    const args = { title: 'Installed from a tarball', intent_id: `pkg-mcp-${Date.now()}` };
    const first = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
    const second = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
    expect(first.structuredContent).toMatchObject({ outcome: 'created' });
    expect(second.structuredContent).toMatchObject({
      outcome: 'replayed',
      ticket_id: first.structuredContent?.ticket_id,
    });
  });
});

describe('examples/downstream-consumer: the consumer kit from its tarball, in a database of its own', () => {
  const topic = uniqueName('pkg-events');
  const groupId = uniqueName('ticket-log');
  let example: { dir: string; cleanup(): void };
  let database: ScratchDatabase;
  let db: Pool;
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let tenant: TestTenant;
  let consumer: ChildProcess | undefined;
  /** What the consumer started last printed (stdout and stderr). */
  let consumerOutput = '';
  let kafka: Awaited<ReturnType<typeof kafkaFixture>>;
  const env = () => ({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    GROUP_ID: groupId,
    METRICS_PORT: '0',
  });

  beforeAll(async () => {
    example = copyExample('downstream-consumer');
    // What a downstream team runs: the tarballs (stand-ins for the registry) and Nest from the registry.
    await npmInstall(example.dir, [
      tarballs['@tickets/event-consumer'],
      tarballs['@tickets/contracts'],
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/microservices',
      'pino',
      'reflect-metadata',
      'rxjs',
    ]);
    database = await scratchDatabase('downstream');
    db = new Pool({ connectionString: database.url, max: 2 });
    kafka = await kafkaFixture(topic, 3);
    tenant = await createTenant('pkg-consumer');
    // The ticket service as it ships: the API with its relay, publishing to this test's topic.
    api = await startApiProcess({
      RELAY_ENABLED: 'true',
      TICKET_EVENTS_TOPIC: topic,
      TICKET_EVENTS_PARTITIONS: '3',
      RELAY_POLL_INTERVAL: '200ms',
    });
  }, 600_000);
  afterAll(async () => {
    consumer?.kill('SIGKILL');
    await api?.stop();
    await kafka?.close();
    await db?.end();
    await database?.drop();
    example?.cleanup();
  });

  const startConsumer = async (): Promise<ChildProcess> => {
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: example.dir,
      env: { ...process.env, ...env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    consumerOutput = '';
    child.stdout!.on('data', (d: Buffer) => (consumerOutput += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (consumerOutput += d.toString()));
    await eventually(
      () => consumerOutput,
      (o) => o.includes('consuming') || child.exitCode !== null,
      60_000,
      'the consumer to start',
    );
    expect({ exit: child.exitCode, output: child.exitCode === null ? '' : consumerOutput }).toEqual({
      exit: null,
      output: '',
    });
    return child;
  };
  const stop = (child: ChildProcess | undefined, signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (!child || child.exitCode !== null || child.signalCode) return resolve();
      // 'close', not 'exit': by then its output has been read to the last line.
      child.once('close', () => resolve());
      child.kill(signal);
    });
  // This tenant's events in the log (the relay also publishes whatever other tests left in the shared
  // test database's outbox), and whether any event at all was logged twice.
  const logged = async () => {
    const all = (
      await db.query<{ n: number; distinct: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM ticket_log',
      )
    ).rows[0];
    const ours = (
      await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ticket_log WHERE tenant_id = $1', [tenant.tenantId])
    ).rows[0];
    return { n: ours.n, appliedTwice: all.n - all.distinct };
  };
  const createTickets = async (n: number, prefix: string) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await post(api.baseUrl, '/v1/tickets', tenant.apiKey, { title: `${prefix} ${i}` }, `${prefix}-${i}`);
      expect(r.status).toBe(201);
      ids.push(JSON.parse(r.text).id);
    }
    return ids;
  };

  it('compiles under strict', async () => {
    const build = await run('npm', ['run', 'build'], { cwd: example.dir });
    expect({ code: build.code, output: build.code === 0 ? '' : build.stdout + build.stderr }).toEqual({
      code: 0,
      output: '',
    });
  });

  it('migrates its own empty database: the kit schema and its own table, nothing of the ticket service; a second migrate changes nothing', async () => {
    const first = await run('npm', ['run', 'migrate'], { cwd: example.dir, env: env() });
    expect({ code: first.code, out: first.code === 0 ? '' : first.stdout + first.stderr }).toEqual({
      code: 0,
      out: '',
    });
    const tables = await db.query<{ t: string }>(
      "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    );
    const names = tables.rows.map((r) => r.t);
    expect(names).toContain('public.ticket_log');
    expect(names).toContain('ticket_events.inbox_events');
    expect(names.filter((t) => !t.startsWith('ticket_events.') && t !== 'public.ticket_log')).toEqual([]);
    const migrations = await db.query('SELECT version FROM ticket_events.kit_migrations ORDER BY version');
    const again = await run(join(example.dir, 'node_modules', '.bin', 'ticket-events'), ['migrate'], {
      cwd: example.dir,
      env: env(),
    });
    expect(again.code).toBe(0);
    expect((await db.query('SELECT version FROM ticket_events.kit_migrations ORDER BY version')).rows).toEqual(
      migrations.rows,
    );
  });

  it('applies each event once through redeliveries, a SIGKILL mid-stream and a replay of the whole topic', async () => {
    consumer = await startConsumer();
    const first = await createTickets(20, 'first');
    for (const id of first.slice(0, 5))
      expect((await post(api.baseUrl, `/v1/tickets/${id}/cancel`, tenant.apiKey, {}, `cancel-${id}`)).status).toBe(200);
    await eventually(logged, (c) => c.n >= 25, 60_000, '25 events logged');

    // Redeliveries: every message on the topic produced again, as a producer retry or a relay crash would.
    const copies = await readTopic(topic);
    expect(copies.length).toBeGreaterThanOrEqual(25);
    await produceInChunks(kafka.producer, topic, copies);
    await eventually(
      async () =>
        (await db.query<{ d: number }>('SELECT coalesce(sum(duplicates), 0)::int AS d FROM ticket_events.inbox_events'))
          .rows[0].d,
      (d) => d >= 25,
      60_000,
      'the copies skipped by the inbox',
    );
    expect(await logged()).toEqual({ n: 25, appliedTwice: 0 });

    // A SIGKILL while events stream in: nothing lost, nothing applied twice after the restart.
    const more = createTickets(40, 'second');
    await eventually(logged, (c) => c.n > 25, 60_000, 'the second batch to start arriving');
    await stop(consumer, 'SIGKILL');
    await more;
    consumer = await startConsumer();
    await eventually(logged, (c) => c.n >= 65, 90_000, '65 events logged');
    expect(await logged()).toEqual({ n: 65, appliedTwice: 0 });

    // The whole topic read again (the group stopped first): every event skipped by the inbox.
    await stop(consumer, 'SIGTERM');
    // Its last line is out before the process ends (the README's synchronous pino destination).
    const lastLine = consumerOutput.trimEnd().split('\n').at(-1) ?? '';
    expect(lastLine).toContain('"msg":"event consumer stopped"');
    const replay = await run(
      join(example.dir, 'node_modules', '.bin', 'ticket-events'),
      ['replay', '--group', groupId, '--from', 'earliest'],
      { cwd: example.dir, env: env() },
    );
    expect({ code: replay.code, out: replay.code === 0 ? '' : replay.stdout + replay.stderr }).toEqual({
      code: 0,
      out: '',
    });
    consumer = await startConsumer();
    const reread = async () =>
      (
        await db.query<{ reread: number; skipped: number; total: number }>(
          `SELECT coalesce(sum(reread), 0)::int AS reread, coalesce(sum(skipped), 0)::int AS skipped, coalesce(sum(end_offset - start_offset), 0)::int AS total
         FROM ticket_events.replay_partitions p JOIN ticket_events.replays r ON r.id = p.replay_id WHERE r.group_id = $1`,
          [groupId],
        )
      ).rows[0];
    const report = await eventually(
      reread,
      (r) => r.total > 0 && r.reread >= r.total,
      90_000,
      'the replay to be re-read',
    );
    expect(report.skipped).toBe(report.reread);
    expect(await logged()).toEqual({ n: 65, appliedTwice: 0 });
    await stop(consumer, 'SIGTERM');
  });

  it("holds a ticket's later events behind its dead letter, and the installed bin requeues them after it, in order", async () => {
    // The consumer's own table refuses this ticket's title for now: its create fails every attempt.
    await db.query(`ALTER TABLE ticket_log ADD CONSTRAINT not_yet CHECK (title NOT LIKE 'not yet%')`);
    consumer = await startConsumer();
    const [ticket] = await createTickets(1, 'not yet');
    expect(
      (await post(api.baseUrl, `/v1/tickets/${ticket}/cancel`, tenant.apiKey, {}, `cancel-${ticket}`)).status,
    ).toBe(200);
    const [after] = await createTickets(1, 'after');
    const deadLetters = async () =>
      (
        await db.query<{ cause: string; type: string; resolution: string | null }>(
          `SELECT cause, value::jsonb->>'type' AS type, resolution FROM ticket_events.consumer_dead_letters d
            WHERE group_id = $1 AND key = $2 ORDER BY d."offset"`,
          [groupId, ticket],
        )
      ).rows;
    const rows = await eventually(
      deadLetters,
      (r) => r.length === 2,
      60_000,
      "the ticket's create dead, its cancel held",
    );
    expect(rows).toEqual([
      { cause: 'handler_failed', type: 'ticket.created.v1', resolution: null },
      { cause: 'held', type: 'ticket.cancelled.v1', resolution: null },
    ]);
    const types = async (id: string) =>
      (await db.query<{ type: string }>('SELECT type FROM ticket_log WHERE ticket_id = $1 ORDER BY id', [id])).rows.map(
        (r) => r.type,
      );
    // Other tickets go on; the held ticket has nothing applied.
    await eventually(
      () => types(after),
      (t) => t.length === 1,
      60_000,
      'the next ticket logged',
    );
    expect(await types(ticket)).toEqual([]);

    await db.query('ALTER TABLE ticket_log DROP CONSTRAINT not_yet');
    const requeue = await run(
      join(example.dir, 'node_modules', '.bin', 'ticket-events'),
      [
        'dead-letters',
        'requeue',
        '--group',
        groupId,
        '--ticket',
        ticket,
        '--by',
        'packages-e2e',
        '--follow',
        '--timeout',
        '2m',
      ],
      { cwd: example.dir, env: env() },
    );
    expect({ code: requeue.code, stderr: requeue.stderr }).toEqual({ code: 0, stderr: '' });
    expect(requeue.stdout.split('\n').filter((l) => l.startsWith('requeued: '))).toHaveLength(2);
    // --follow returns once the running consumer has handled both copies: no waiting here.
    expect(requeue.stdout).toContain(`followed: group ${groupId} handled 2 of 2 copies`);
    expect(await types(ticket)).toEqual(['ticket.created.v1', 'ticket.cancelled.v1']);
    expect((await deadLetters()).map((r) => r.resolution)).toEqual(['requeued', 'requeued']);
    expect((await logged()).appliedTwice).toBe(0);
    await stop(consumer, 'SIGTERM');
  });
});

/** Every message of the topic, as a producer would send it again. */
/**
 * `messages` produced again in order, in requests of at most 256 KB: the topic also holds whatever other tests
 * left in the shared outbox, and all of it in one request can pass the broker's 1 MB `message.max.bytes`.
 */
async function produceInChunks(producer: Producer, topic: string, messages: Message[]): Promise<void> {
  const size = (m: Message): number =>
    [m.key, m.value, ...Object.values(m.headers ?? {}).flat()].reduce<number>(
      (sum, part) => sum + (part ? Buffer.byteLength(part as Buffer | string) : 0),
      0,
    );
  let chunk: Message[] = [];
  let bytes = 0;
  for (const message of messages) {
    const bytesOf = size(message);
    if (chunk.length > 0 && bytes + bytesOf > 256 * 1024) {
      await producer.send({ topic, messages: chunk });
      chunk = [];
      bytes = 0;
    }
    chunk.push(message);
    bytes += bytesOf;
  }
  if (chunk.length > 0) await producer.send({ topic, messages: chunk });
}

async function readTopic(topic: string): Promise<Message[]> {
  const reader = testKafka().consumer({ groupId: uniqueName('pkg-reader') });
  const messages: Message[] = [];
  await reader.connect();
  await reader.subscribe({ topic, fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) =>
      void messages.push({ key: message.key, value: message.value, headers: message.headers as Message['headers'] }),
  });
  await eventually(
    () => messages.length,
    (n) => n >= 25,
    60_000,
    'the topic to be read',
  );
  await reader.disconnect();
  return messages;
}
