import { connect } from 'node:net';
import { TicketClient, TicketClientError } from '@tickets/agent-client';
import { Pool } from 'pg';
import { drainHttp } from '../../apps/ticket-api/src/edge/graceful-shutdown';
import { TEST_DATABASE_URL } from '../support/env';
import { parseResponses } from '../support/raw-http';
import { createTenant, post, startApiProcess, startTestStack } from '../support/stack';

// SIGTERM to a real API process (compiled dist/) while agents built on the project's agent client
// keep calling it over keep-alive connections, with a second instance to move to: the request in
// flight is answered, no client sees a 5xx, every intent ends as exactly one ticket, and the process
// exits 0.

/** A breaker that never opens: the calls to the draining instance are the point. */
const NO_BREAKER = {
  failureThreshold: Number.MAX_SAFE_INTEGER,
  minimumCalls: Number.MAX_SAFE_INTEGER,
  lostThreshold: Number.MAX_SAFE_INTEGER,
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

describe('API graceful shutdown (SIGTERM under keep-alive load)', () => {
  let db: Pool;
  beforeAll(() => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 3 });
  });
  afterAll(async () => {
    await db.end();
  });

  it('finishes the request in flight, answers no 5xx, loses no intent and exits 0', async () => {
    const tenant = await createTenant('graceful');
    const a = await startApiProcess({ SHUTDOWN_GRACE: '10s' });
    const b = await startApiProcess();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      a.proc.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      // A request that is still running when the signal comes: a cancel blocked on the ticket's row lock.
      const made = await post(
        a.baseUrl,
        '/v1/tickets',
        tenant.apiKey,
        { title: 'held', priority: 'normal' },
        'graceful-held',
      );
      expect(made.status).toBe(201);
      const heldId = (JSON.parse(made.text) as { id: string }).id;
      const holder = await db.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM tickets WHERE id = $1 FOR UPDATE', [heldId]);
      const inFlight = post(
        a.baseUrl,
        `/v1/tickets/${heldId}/cancel`,
        tenant.apiKey,
        { reason: 'drain' },
        'graceful-held-cancel',
      );

      // Agents: keep-alive calls to A; a call that gives up moves to B (as the chaos storm's agents do).
      const raw = new Map<string, number>();
      const recording: typeof fetch = async (input, init) => {
        try {
          const res = await fetch(input, init);
          if (res.status >= 500) {
            const code = await res
              .clone()
              .json()
              .then(
                (x) => (x as { code?: string }).code ?? '?',
                () => 'no-body',
              );
            bump(raw, `${res.status} ${code}`);
          } else bump(raw, `${res.status}`);
          return res;
        } catch (err) {
          bump(raw, `transport ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name}`);
          throw err;
        }
      };
      const options = {
        apiKey: tenant.apiKey,
        fetch: recording,
        attemptTimeoutMs: 5_000,
        maxTotalTimeMs: 10_000,
        backoff: { baseMs: 50, capMs: 500 },
        circuitBreaker: NO_BREAKER,
      };
      const toA = new TicketClient({ ...options, baseUrl: a.baseUrl });
      const toB = new TicketClient({ ...options, baseUrl: b.baseUrl });
      const gaveUp = new Map<string, number>();
      const intents: string[] = [];
      let stop = false;
      let signalled = false;
      let answeredAfterSignal = 0;
      const agents = Array.from({ length: 6 }, async (_, agent) => {
        for (let n = 0; !stop; n++) {
          const intentId = `${tenant.slug}-${agent}-${n}`;
          intents.push(intentId);
          const input = { title: intentId, priority: 'normal' as const };
          for (const client of [toA, toB, toB, toB]) {
            try {
              await client.createTicket(input, { intentId });
              if (signalled && client === toA) answeredAfterSignal++;
              break;
            } catch (err) {
              bump(gaveUp, err instanceof TicketClientError ? err.code : (err as Error).name);
            }
          }
        }
      });

      await sleep(1_500);
      const beforeSignal = raw.get('201') ?? 0;
      a.proc.kill('SIGTERM');
      signalled = true;
      await sleep(1_000);
      await holder.query('ROLLBACK');
      holder.release();
      const held = await inFlight;
      const exit = await exited;
      await sleep(1_000);
      stop = true;
      await Promise.all(agents);

      const fiveHundreds = [...raw.entries()].filter(([k]) => /^5\d\d/.test(k));
      // What the agents saw, for the record: resets and refusals are the agent client's to recover from.
      process.stdout.write(
        `graceful shutdown: answers and transport errors ${JSON.stringify([...raw.entries()])}; calls that gave up ${JSON.stringify([...gaveUp.entries()])}; intents ${intents.length}; answered by A after SIGTERM ${answeredAfterSignal}\n`,
      );

      expect(beforeSignal).toBeGreaterThan(0);
      expect(held.status).toBe(200);
      expect(JSON.parse(held.text)).toMatchObject({ id: heldId, status: 'cancelled' });
      expect(held.headers.get('connection')).toBe('close');
      expect(exit).toEqual({ code: 0, signal: null });
      expect(fiveHundreds).toEqual([]);
      const { rows } = await db.query<{ title: string; n: number }>(
        `SELECT title, count(*)::int AS n FROM tickets WHERE tenant_id = $1 AND title <> 'held' GROUP BY title`,
        [tenant.tenantId],
      );
      expect(rows.filter((r) => r.n !== 1)).toEqual([]);
      expect(rows.map((r) => r.title).sort()).toEqual([...intents].sort());
    } finally {
      a.proc.kill('SIGKILL');
      await b.stop();
    }
  });

  it('answers a request that arrives on an open connection during the drain with 503 shutting_down, and refuses new connections', async () => {
    const stack = await startTestStack();
    try {
      const { port } = new URL(stack.baseUrl);
      // A connection whose request has begun (headers half sent) is not idle: the drain leaves it open.
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise<void>((r) => socket.once('connect', () => r()));
      let raw = '';
      socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      socket.write(`GET /v1/tickets HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
      await sleep(100);
      const drained = drainHttp(stack.app, 5_000);
      const refused = await new Promise<string>((resolve) => {
        const s2 = connect(Number(port), '127.0.0.1');
        s2.once('connect', () => (s2.destroy(), resolve('connected')));
        s2.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });
      socket.write(`Authorization: Bearer ${stack.apiKey}\r\n\r\n`);
      await closed;
      const result = await drained;
      const { responses } = parseResponses(raw);
      expect(refused).toBe('ECONNREFUSED');
      expect(responses).toHaveLength(1);
      expect(responses[0].status).toBe(503);
      expect(responses[0].headers['retry-after']).toBe('1');
      expect(responses[0].headers.connection).toBe('close');
      expect(JSON.parse(responses[0].body)).toMatchObject({ code: 'shutting_down', retryable: true });
      expect(result.cutConnections).toBe(0);
    } finally {
      await stack.stop();
    }
  });
});
