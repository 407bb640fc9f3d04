import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FaultProxy, type Fault } from '@tickets/fault-proxy';
import { startMcpStdio } from '../support/mcp-stdio';
import { pool } from '../support/pool';
import { startTestStack, type TestStack, type TestTenant } from '../support/stack';

// An agent on a lossy link: the official MCP SDK client drives the compiled MCP server over stdio;
// the MCP server talks to the real API through a proxy that loses 30 % of the answers AFTER the API
// did the work (the request reached the API, the API answered, the client got a dropped or reset
// connection instead). The agent behaves as a model would: it calls create_ticket once per intent
// and, on a tool error, calls again with the same intent_id, at most 4 calls per intent.

const RUNS = 5;
const INTENTS = 60;
const MAX_CALLS_PER_INTENT = 4;
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

describe('MCP agent on a lossy link (30 % of answers lost after the API acted)', () => {
  let stack: TestStack;
  let proxy: FaultProxy;

  beforeAll(async () => {
    stack = await startTestStack();
    proxy = await FaultProxy.start({ target: stack.baseUrl });
  });
  afterAll(async () => {
    await proxy.stop();
    await stack.stop();
  });

  it(`${RUNS} runs of ${INTENTS} intents: every intent gets its one ticket within ${MAX_CALLS_PER_INTENT} tool calls`, async () => {
    const summary: string[] = [];
    for (let run = 1; run <= RUNS; run += 1) {
      const tenant: TestTenant = await stack.newTenant(`mcp-lossy-${run}`);
      const random = seeded(9_000 + run);
      // Half the losses cut the connection as the answer starts, half reset it after the whole answer
      // reached the proxy: either way the API committed and the MCP server never saw its answer.
      const decide = (): Fault => {
        const r = random();
        return r < LOSS / 2 ? 'drop-response' : r < LOSS ? 'reset-response' : 'pass';
      };
      proxy.configure({ decide });
      proxy.resetStats();

      const agent = await startMcpStdio({
        TICKETS_API_URL: proxy.url,
        TICKETS_API_KEY: tenant.apiKey,
        // Test pacing only (the loss costs milliseconds here, not seconds); the breaker keeps its defaults.
        TICKETS_TOOL_DEADLINE_MS: '8000',
        TICKETS_ATTEMPT_TIMEOUT_MS: '3000',
        TICKETS_RETRY_BASE_MS: '20',
        TICKETS_RETRY_MAX_DELAY_MS: '200',
      });
      const calls = new Map<string, number>();
      const tickets = new Map<string, string>();
      const failures: string[] = [];
      try {
        const intents = Array.from({ length: INTENTS }, (_, i) => `run-${run}-intent-${i}`);
        await pool(intents, CONCURRENCY, async (intentId) => {
          const args = { intent_id: intentId, title: `Lossy ${intentId}`, metadata: { intentId } };
          for (let n = 1; n <= MAX_CALLS_PER_INTENT; n += 1) {
            calls.set(intentId, n);
            const result = (await agent.client.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
            if (!result.isError) {
              tickets.set(intentId, String(result.structuredContent?.ticket_id));
              return;
            }
            const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
            failures.push(`${intentId} call ${n}: ${text}`);
            // What the error tells a model to do is what this agent does next: same intent_id again.
            expect(text).toMatch(/again with the same intent_id/);
          }
        });

        // A later call with the same intent_id, on a clean link, finds the intent's ticket.
        proxy.configure({ decide: () => 'pass' });
        const later = (await agent.client.callTool({
          name: 'create_ticket',
          arguments: {
            intent_id: `run-${run}-intent-0`,
            title: `Lossy run-${run}-intent-0`,
            metadata: { intentId: `run-${run}-intent-0` },
          },
        })) as CallToolResult;
        expect(later.structuredContent).toMatchObject({
          outcome: 'replayed',
          ticket_id: tickets.get(`run-${run}-intent-0`),
        });
      } finally {
        await agent.client.close();
      }

      const lostPosts = proxy.stats.exchangesLog.filter((x) => x.method === 'POST' && x.fault !== 'pass').length;
      const lostQueries = proxy.stats.exchangesLog.filter((x) => x.method === 'GET' && x.fault !== 'pass').length;
      const { rows } = await stack.db.query<{ intent: string; n: number }>(
        `SELECT metadata->>'intentId' AS intent, count(*)::int AS n FROM tickets WHERE tenant_id = $1 GROUP BY 1`,
        [tenant.tenantId],
      );
      const perIntent = [...calls.values()];
      const breakerOpened = agent.logs.filter((l) => l.type === 'breaker-state-change' && l.to === 'open').length;
      summary.push(
        `run ${run}: tickets=${rows.reduce((s, r) => s + r.n, 0)} intents-with-ticket=${tickets.size} ` +
          `tool-calls/intent max=${Math.max(...perIntent)} mean=${(perIntent.reduce((s, n) => s + n, 0) / perIntent.length).toFixed(2)} ` +
          `exchanges=${proxy.stats.exchanges} lost-posts=${lostPosts} lost-status-queries=${lostQueries} breaker-opened=${breakerOpened}`,
      );

      expect(failures.filter((f) => !/call [123]:/.test(f))).toEqual([]);
      expect(tickets.size).toBe(INTENTS);
      expect(Math.max(...perIntent)).toBeLessThanOrEqual(MAX_CALLS_PER_INTENT);
      // Exactly one ticket per intent in the database: 60 tickets, 0 duplicates.
      expect(rows).toHaveLength(INTENTS);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      expect(new Set(tickets.values()).size).toBe(INTENTS);
      // The loss was real: answers to committed creates never reached the MCP server.
      expect(lostPosts).toBeGreaterThanOrEqual(INTENTS * LOSS * 0.5);
      expect(proxy.stats.faults['drop-response']).toBeGreaterThan(0);
      expect(proxy.stats.faults['reset-response']).toBeGreaterThan(0);
      // A lossy-but-working API never opens the circuit.
      expect(breakerOpened).toBe(0);
    }
    process.stderr.write(`mcp lossy link:\n  ${summary.join('\n  ')}\n`);
  });
});
