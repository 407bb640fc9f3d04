import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Pool } from 'pg';
import { FaultProxy, type Fault } from '@tickets/fault-proxy';
import { TEST_DATABASE_URL } from '../support/env';
import { connectMcpHttp } from '../support/mcp-http';
import { pool } from '../support/pool';
import { createTenant, startApiProcess } from '../support/stack';

// An agent on a lossy link to /mcp: the official MCP SDK client (Streamable HTTP) talks to the
// compiled API through a proxy that loses 30 % of the answers AFTER the API did the work (the tool
// call ran and committed; the agent got a dropped or reset connection instead of its result). Over
// HTTP there is no MCP server process in between to retry for the agent: the agent itself calls
// create_ticket again with the same intent_id, as a host retries a failed request, until it gets an
// answer. The intent_id -> key rule is what keeps that at one ticket per intent.

const RUNS = 3;
const INTENTS = 60;
/** A safety stop only: with 30 % loss, 20 losses in a row has odds of 3.5e-11. */
const MAX_CALLS_PER_INTENT = 20;
const CONCURRENCY = 6;
const LOSS = 0.3;

/** mulberry32: a fixed seed per run makes the loss pattern repeatable for a given arrival order. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('MCP agent on a lossy link to /mcp (30 % of answers lost after the API acted)', () => {
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let proxy: FaultProxy;
  let db: Pool;

  beforeAll(async () => {
    api = await startApiProcess();
    proxy = await FaultProxy.start({ target: api.baseUrl });
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  });
  afterAll(async () => {
    await proxy.stop();
    await api.stop();
    await db.end();
  });

  it(`${RUNS} runs of ${INTENTS} intents: every intent gets exactly one ticket`, async () => {
    const summary: string[] = [];
    for (let run = 1; run <= RUNS; run += 1) {
      const tenant = await createTenant(`mcp-http-lossy-${run}`);
      // Connected on a clean link (the handshake is not what is under test), then the loss starts.
      proxy.configure({ decide: () => 'pass' });
      const agent = await connectMcpHttp(proxy.url, tenant.apiKey);
      const random = seeded(7_000 + run);
      // Half the losses cut the connection as the answer starts, half reset it after the whole answer
      // reached the proxy: either way the API committed and the agent never saw its answer.
      const decide = (): Fault => {
        const r = random();
        return r < LOSS / 2 ? 'drop-response' : r < LOSS ? 'reset-response' : 'pass';
      };
      proxy.configure({ decide });
      proxy.resetStats();

      const calls = new Map<string, number>();
      const tickets = new Map<string, { id: string; outcome: string }>();
      try {
        const intents = Array.from({ length: INTENTS }, (_, i) => `http-run-${run}-intent-${i}`);
        await pool(intents, CONCURRENCY, async (intentId) => {
          const args = { intent_id: intentId, title: `Lossy ${intentId}`, metadata: { intentId } };
          for (let n = 1; n <= MAX_CALLS_PER_INTENT; n += 1) {
            calls.set(intentId, n);
            let result: CallToolResult;
            try {
              result = (await agent.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
            } catch {
              continue; // the answer was lost on the way: call again with the same intent_id
            }
            expect(result.isError).toBeFalsy();
            tickets.set(intentId, {
              id: String(result.structuredContent?.ticket_id),
              outcome: String(result.structuredContent?.outcome),
            });
            return;
          }
        });

        // A later call with the same intent_id, on a clean link, finds the intent's ticket.
        proxy.configure({ decide: () => 'pass' });
        const first = `http-run-${run}-intent-0`;
        const later = (await agent.callTool({
          name: 'create_ticket',
          arguments: { intent_id: first, title: `Lossy ${first}`, metadata: { intentId: first } },
        })) as CallToolResult;
        expect(later.structuredContent).toMatchObject({ outcome: 'replayed', ticket_id: tickets.get(first)?.id });
      } finally {
        await agent.close();
      }

      const lost = proxy.stats.exchangesLog.filter((x) => x.method === 'POST' && x.fault !== 'pass').length;
      const { rows } = await db.query<{ intent: string; n: number }>(
        `SELECT metadata->>'intentId' AS intent, count(*)::int AS n FROM tickets WHERE tenant_id = $1 GROUP BY 1`,
        [tenant.tenantId],
      );
      const perIntent = [...calls.values()];
      const replayed = [...tickets.values()].filter((t) => t.outcome === 'replayed').length;
      summary.push(
        `run ${run}: tickets=${rows.reduce((s, r) => s + r.n, 0)} intents-with-ticket=${tickets.size} ` +
          `tool-calls/intent max=${Math.max(...perIntent)} mean=${(perIntent.reduce((s, n) => s + n, 0) / perIntent.length).toFixed(2)} ` +
          `exchanges=${proxy.stats.exchanges} lost-answers=${lost} answered-as-replayed=${replayed}`,
      );

      expect(tickets.size).toBe(INTENTS);
      // Exactly one ticket per intent in the database: 60 tickets, 0 duplicates.
      expect(rows).toHaveLength(INTENTS);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      expect(new Set([...tickets.values()].map((t) => t.id)).size).toBe(INTENTS);
      // The loss was real, and it hit committed creates: their retries were answered from the key.
      expect(lost).toBeGreaterThanOrEqual(INTENTS * LOSS * 0.5);
      expect(proxy.stats.faults['drop-response']).toBeGreaterThan(0);
      expect(proxy.stats.faults['reset-response']).toBeGreaterThan(0);
      expect(replayed).toBeGreaterThan(0);
    }
    process.stderr.write(`mcp over http, lossy link:\n  ${summary.join('\n  ')}\n`);
  });
});
