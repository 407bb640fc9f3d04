// Simulated agents built on the project's agent client: each intent is a create (some with a parallel
// duplicate call of the same intent on another API instance), some followed by a cancel. An agent
// whose call gives up retries the same intent on the next instance, as an agent retrying a tool does.
import { TicketClient, TicketClientError, type TicketClientEvent } from '@tickets/agent-client';

export interface StormOptions {
  baseUrls: () => string[];
  apiKey: string;
  runId: string;
  intents: number;
  agents: number;
  /** Spread the intents over about this long. */
  durationMs: number;
  cancelRate: number;
  duplicateRate: number;
  /** Calls per intent before the agent gives up on it (each call has the client's own retries). */
  maxCallsPerIntent: number;
  log: (line: string) => void;
}

export interface StormResult {
  intents: number;
  created: number;
  cancelIntents: number;
  cancelled: number;
  /** Intents the agents gave up on (each is a broken promise unless the ticket exists anyway). */
  abandoned: string[];
  /** What the client saw: HTTP 5xx by `<status> <code>`, and transport errors by name. */
  responses: Map<string, number>;
  /** Calls that threw (before the agent's own retry), by client error code. */
  callErrors: Map<string, number>;
  /** Every 5xx answer and transport failure with its time, so a fault's window can be read from it. */
  timeline: Array<{ at: number; key: string }>;
}

const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fetch that records every 5xx answer (with its problem code) and every transport failure. */
function recordingFetch(responses: Map<string, number>, timeline: StormResult['timeline']): typeof fetch {
  const record = (key: string) => {
    bump(responses, key);
    timeline.push({ at: Date.now(), key });
  };
  return async (input, init) => {
    try {
      const res = await fetch(input, init);
      if (res.status >= 500) {
        const code = await res
          .clone()
          .json()
          .then(
            (b: unknown) => (b as { code?: string }).code ?? '?',
            () => 'no-problem-body',
          );
        record(`${res.status} ${code}`);
      }
      return res;
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      record(`transport ${cause?.code ?? (err as Error).name}`);
      throw err;
    }
  };
}

export async function runStorm(o: StormOptions, onEvent?: (e: TicketClientEvent) => void): Promise<StormResult> {
  const r: StormResult = {
    intents: o.intents,
    created: 0,
    cancelIntents: 0,
    cancelled: 0,
    abandoned: [],
    responses: new Map(),
    callErrors: new Map(),
    timeline: [],
  };
  const fetchImpl = recordingFetch(r.responses, r.timeline);
  const clients = new Map<string, TicketClient>();
  const client = (url: string) => {
    let c = clients.get(url);
    if (!c) {
      // The breaker would fail calls fast while an instance is down; the agent moves on instead.
      c = new TicketClient({
        baseUrl: url,
        apiKey: o.apiKey,
        fetch: fetchImpl,
        attemptTimeoutMs: 5_000,
        maxTotalTimeMs: 20_000,
        backoff: { baseMs: 100, capMs: 2_000 },
        circuitBreaker: { failureThreshold: Number.MAX_SAFE_INTEGER, minimumCalls: Number.MAX_SAFE_INTEGER },
        retryBudget: { ratio: 10, minRetriesPerSecond: 1000, maxTokens: 10_000 },
        onEvent,
      });
      clients.set(url, c);
    }
    return c;
  };
  let rr = 0;
  const pick = (offset = 0) => {
    const urls = o.baseUrls();
    return urls[(rr + offset) % urls.length];
  };

  /** Calls `op` on instance after instance until it answers or the agent gives up. */
  async function persist<T>(what: string, op: (c: TicketClient) => Promise<T>, offset = 0): Promise<T | undefined> {
    for (let i = 0; i < o.maxCallsPerIntent; i++) {
      try {
        return await op(client(pick(offset + i)));
      } catch (err) {
        bump(r.callErrors, err instanceof TicketClientError ? err.code : (err as Error).name);
        if (err instanceof TicketClientError && !err.retryable) {
          o.log(`agent: ${what} failed permanently: ${err.code} ${err.message}`);
          return undefined;
        }
        await sleep(200);
      }
    }
    return undefined;
  }

  const perAgent = Math.ceil(o.intents / o.agents);
  const pause = Math.max(0, Math.floor(o.durationMs / perAgent));
  let next = 0;
  await Promise.all(
    Array.from({ length: o.agents }, async (_, agent) => {
      await sleep(Math.floor((pause * agent) / o.agents));
      while (next < o.intents) {
        const n = next++;
        rr++;
        const intentId = `${o.runId}-intent-${n}`;
        const input = { title: intentId, description: `chaos agent ${agent}`, priority: 'normal' as const };
        const first = persist(`create ${intentId}`, (c) => c.createTicket(input, { intentId }));
        // A parallel duplicate call of the same intent (same derived key) on another instance.
        const dup =
          Math.random() < o.duplicateRate
            ? persist(`duplicate create ${intentId}`, (c) => c.createTicket(input, { intentId }), 1)
            : undefined;
        const [made] = await Promise.all([first, dup]);
        if (!made) {
          r.abandoned.push(intentId);
        } else {
          r.created++;
          if (Math.random() < o.cancelRate) {
            r.cancelIntents++;
            const cancelled = await persist(`cancel ${intentId}`, (c) =>
              c.cancelTicket(made.ticket.id, { intentId: `${intentId}-cancel`, reason: 'chaos' }),
            );
            if (cancelled) r.cancelled++;
            else r.abandoned.push(`${intentId}-cancel`);
          }
        }
        await sleep(pause);
      }
    }),
  );
  return r;
}
