import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { loadConfig } from '@tickets/config';
import { reconcile } from '@tickets/reconcile';
import { runCli } from '../../apps/cli/src/cli';
import { reconcileCli } from '../../apps/cli/src/reconcile.command';
import { TEST_DATABASE_URL } from '../support/env';
import { post, startTestStack, type TestStack } from '../support/stack';

describe('reconciliation job', () => {
  let stack: TestStack;
  let prisma: PrismaClient;
  beforeAll(async () => {
    stack = await startTestStack();
    prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'reconcile-test');
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await stack.stop();
  });

  const run = (tenant: string, graceMs = 0) =>
    reconcile(prisma, {
      since: new Date(Date.now() - 3_600_000),
      grace: new Date(Date.now() - graceMs),
      group: 'reconcile-test-group',
      tenant,
    });
  const byCheck = (findings: Awaited<ReturnType<typeof run>>) =>
    Object.fromEntries(findings.map((f) => [f.check, f.count]));

  it('finds nothing wrong with freshly created tickets inside the grace period', async () => {
    const t = await stack.newTenant('recon-ok');
    for (let i = 0; i < 3; i++)
      expect((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: `ok ${i}` }, `ok-${i}`)).status).toBe(201);
    expect(await run(t.slug, 60_000)).toEqual([]);
  });

  it('reports unpublished events, tickets missing their event, and keys whose ticket is gone', async () => {
    const t = await stack.newTenant('recon-bad');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        JSON.parse((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: `bad ${i}` }, `bad-${i}`)).text).id,
      );
    // No relay runs in this test: all three events are unpublished past a zero grace period.
    expect(byCheck(await run(t.slug))).toEqual({ 'outbox event unpublished for longer than the grace period': 3 });

    await stack.db.query('DELETE FROM outbox_events WHERE aggregate_id = $1', [ids[0]]); // an event lost by hand
    await stack.db.query('DELETE FROM outbox_events WHERE aggregate_id = $1', [ids[1]]);
    await stack.db.query('DELETE FROM tickets WHERE id = $1', [ids[1]]); // a ticket deleted by hand
    const findings = await run(t.slug);
    expect(byCheck(findings)).toEqual({
      'ticket without its ticket.created.v1 event': 1,
      'idempotency key pointing at a missing ticket': 1,
      'outbox event unpublished for longer than the grace period': 1,
    });
    const missing = findings.find((f) => f.check === 'ticket without its ticket.created.v1 event')!;
    expect(missing.sample).toEqual([ids[0]]);
    expect(missing.advice).toMatch(/\w/);
  });

  it('as the CLI command: exit 1 and the findings as JSON, exit 0 when everything agrees', async () => {
    const t = await stack.newTenant('recon-cli');
    expect((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'cli' }, 'cli-1')).status).toBe(201);
    const cli = async (...argv: string[]) => {
      const out: string[] = [];
      const progress: string[] = [];
      const ctx = {
        prisma,
        config: loadConfig({ DATABASE_URL: TEST_DATABASE_URL }),
        out: (l: string) => out.push(l),
        err: (t: string) => progress.push(t),
      };
      const code = await runCli(['reconcile', '--tenant', t.slug, ...argv], [reconcileCli], {
        ...ctx,
        open: async () => ({ ctx, close: async () => undefined }),
      });
      return { code, out, progress };
    };
    const bad = await cli('--grace', '0s', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out.join('\n'))).toMatchObject({
      ok: false,
      findings: [{ check: 'outbox event unpublished for longer than the grace period', count: 1 }],
    });
    expect(bad.progress.at(-1)).toBe('reconcile: [11/11] done\n');
    const ok = await cli('--grace', '1h');
    expect(ok).toMatchObject({
      code: 0,
      out: [
        'reconcile: everything agrees (tickets, keys, outbox, inbox, notifications)',
        'duplicate-creation rate: 0 of 1 tickets (0.000 %)',
      ],
    });
  });
});
