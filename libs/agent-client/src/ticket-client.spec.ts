import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './clock';
import { deriveIdempotencyKey } from './idempotency-key';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileKeyStore } from './file-key-store';
import { InMemoryKeyStore } from './key-store';
import { TicketClient, TicketClientOptions } from './ticket-client';
import { PermanentError, RetryableError, UnknownOutcomeError } from './ticket-client.errors';
import type { TicketClientEvent } from './ticket-client.events';
import type { Ticket } from './ticket-client.types';

// HTTP-level unit tests: a real node:http server on 127.0.0.1:0 scripts the answers, the client
// talks to it over real sockets (no fetch mocks). Only time is faked, so waits cost nothing.

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Script = (request: Seen, response: ServerResponse, index: number) => void;

class ScriptedServer {
  readonly seen: Seen[] = [];
  private script: Script = (_req, res) => res.writeHead(500).end();
  private constructor(private readonly server: Server) {}

  static async start(): Promise<ScriptedServer> {
    const server = createServer();
    const scripted = new ScriptedServer(server);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const seen: Seen = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        scripted.seen.push(seen);
        scripted.script(seen, res, scripted.seen.length - 1);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return scripted;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** POSTs only (status queries and reads excluded). */
  get posts(): Seen[] {
    return this.seen.filter((s) => s.method === 'POST');
  }

  respond(script: Script): void {
    this.script = script;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function ticket(overrides: Partial<Ticket> = {}): Ticket {
  return {
    id: '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11',
    title: 'Printer on fire',
    description: null,
    priority: 'normal',
    status: 'open',
    externalRef: null,
    requester: null,
    metadata: null,
    createdAt: '2026-11-30T10:15:00.000Z',
    updatedAt: '2026-11-30T10:15:00.000Z',
    ...overrides,
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const problem = status >= 400;
  res.writeHead(status, { 'content-type': problem ? 'application/problem+json' : 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** The status endpoint's answer for a key whose first request stored a 201 with `body`. */
function keyCompleted(res: ServerResponse, body: unknown = ticket()): void {
  json(res, 200, {
    key: 'k',
    state: 'completed',
    ticketId: ticket().id,
    response: { status: 201, body },
    createdAt: null,
    expiresAt: null,
  });
}

function problem(
  res: ServerResponse,
  status: number,
  code: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): void {
  json(
    res,
    status,
    {
      type: `https://tickets.example/problems/${code}`,
      title: code,
      status,
      detail: code,
      code,
      retryable: false,
      ...extra,
    },
    headers,
  );
}

/** Time that only moves when the client sleeps; sleeps are recorded. */
function fakeClock(): Clock & { sleeps: number[] } {
  let t = Date.parse('2026-11-30T10:15:00Z');
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

describe('TicketClient over HTTP', () => {
  let server: ScriptedServer;
  let clock: ReturnType<typeof fakeClock>;
  let events: TicketClientEvent[];

  const client = (options: Partial<TicketClientOptions> = {}): TicketClient =>
    new TicketClient({
      baseUrl: server.url,
      apiKey: 'test-key',
      clock,
      random: () => 0.5,
      attemptTimeoutMs: 300,
      onEvent: (e) => events.push(e),
      ...options,
    });

  beforeEach(async () => {
    server = await ScriptedServer.start();
    clock = fakeClock();
    events = [];
  });

  afterEach(async () => {
    await server.stop();
  });

  it('creates a ticket with an sf-string Idempotency-Key derived from the intent id and the bearer key', async () => {
    server.respond((_req, res) => json(res, 201, ticket(), { location: `/v1/tickets/${ticket().id}` }));
    const result = await client().createTicket(
      { title: 'Printer on fire', priority: 'high' },
      { intentId: 'intent-1' },
    );

    const key = deriveIdempotencyKey('create', 'intent-1');
    expect(result).toMatchObject({
      outcome: 'created',
      idempotencyKey: key,
      attempts: 1,
      confirmedBy: 'response',
      intentId: 'intent-1',
    });
    expect(result.ticket.id).toBe(ticket().id);
    const [post] = server.posts;
    expect(post.url).toBe('/v1/tickets');
    expect(post.headers['idempotency-key']).toBe(`"${key}"`);
    expect(post.headers.authorization).toBe('Bearer test-key');
    expect(post.headers['content-type']).toBe('application/json');
    expect(JSON.parse(post.body)).toEqual({ title: 'Printer on fire', priority: 'high' });
  });

  it('reports a replay of an earlier call as replayed and a 200 as deduplicated', async () => {
    server.respond((_req, res) => json(res, 201, ticket(), { 'idempotent-replayed': 'true' }));
    expect((await client().createTicket({ title: 't' }, { intentId: 'i' })).outcome).toBe('replayed');
    expect(events.some((e) => e.type === 'replay')).toBe(true);

    server.respond((_req, res) =>
      json(res, 200, ticket({ externalRef: 'ORD-1' }), { 'ticket-deduplicated': 'externalRef' }),
    );
    expect(
      await client().createTicket({ title: 't', priority: 'urgent', externalRef: 'ORD-1' }, { intentId: 'j' }),
    ).toMatchObject({ outcome: 'deduplicated', notApplied: ['title', 'priority'] });
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'deduplicated',
        externalRef: 'ORD-1',
        status: 'open',
        notApplied: ['title', 'priority'],
      }),
    );
  });

  it('409 idempotency_key_in_use: waits for Retry-After, then retries with the same key', async () => {
    server.respond((_req, res, i) =>
      i === 0
        ? problem(res, 409, 'idempotency_key_in_use', { retryable: true }, { 'retry-after': '2' })
        : json(res, 201, ticket(), { 'idempotent-replayed': 'true' }),
    );
    const result = await client().createTicket({ title: 't' }, { intentId: 'in-use' });

    expect(server.posts).toHaveLength(2);
    expect(server.posts[0].headers['idempotency-key']).toBe(server.posts[1].headers['idempotency-key']);
    expect(clock.sleeps).toEqual([2_000]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'retry', delayMs: 2_000, reason: 'idempotency_key_in_use' }),
    );
    expect(result.outcome).toBe('replayed');
  });

  it('Retry-After as an HTTP date wins over backoff', async () => {
    const at = new Date(clock.now() + 7_000).toUTCString();
    server.respond((_req, res, i) =>
      i === 0
        ? problem(res, 503, 'database_unavailable', { retryable: true }, { 'retry-after': at })
        : json(res, 201, ticket()),
    );
    await client().createTicket({ title: 't' });
    expect(clock.sleeps).toEqual([7_000]);
  });

  it('422 idempotency_key_reused is never retried and carries the differing fields', async () => {
    server.respond((_req, res) => problem(res, 422, 'idempotency_key_reused', { differingFields: ['title'] }));
    const store = new InMemoryKeyStore();
    const error = await client({ keyStore: store })
      .createTicket({ title: 'other' }, { intentId: 'reused' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toMatchObject({
      code: 'idempotency_key_reused',
      retryable: false,
      status: 422,
      problem: { differingFields: ['title'] },
    });
    expect(server.seen).toHaveLength(1);
    expect(await store.get('create:reused')).toBeUndefined();
  });

  it('400 validation_failed is never retried', async () => {
    server.respond((_req, res) =>
      problem(res, 400, 'validation_failed', { errors: [{ path: 'title', message: 'Required' }] }),
    );
    const error = await client()
      .createTicket({ title: '' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as PermanentError).problem?.errors).toEqual([{ path: 'title', message: 'Required' }]);
    expect(server.seen).toHaveLength(1);
  });

  it('after a timeout asks the status endpoint, then sends once more under the key and takes the replay', async () => {
    server.respond((req, res) => {
      if (req.method === 'POST' && server.posts.length === 1) return; // processed, but the answer never comes back in time
      if (req.method === 'POST') return json(res, 201, ticket(), { 'idempotent-replayed': 'true' });
      json(res, 200, {
        key: 'k',
        state: 'completed',
        ticketId: ticket().id,
        response: { status: 201, body: JSON.stringify(ticket()) },
        createdAt: '2026-11-30T10:15:00.000Z',
        expiresAt: '2026-12-01T10:15:00.000Z',
      });
    });
    const result = await client().createTicket({ title: 't' }, { intentId: 'slow' });

    expect(result).toMatchObject({ outcome: 'created', confirmedBy: 'status-query', attempts: 2 });
    expect(server.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
    const key = deriveIdempotencyKey('create', 'slow');
    expect(server.seen[1].url).toBe(`/v1/idempotency-keys/${key}`);
    expect(server.posts.map((p) => p.headers['idempotency-key'])).toEqual([`"${key}"`, `"${key}"`]); // an sf-string
    expect(events).toContainEqual(expect.objectContaining({ type: 'status-query', state: 'completed' }));
    // The resend goes at once: it asks the server to compare, it does not retry a failure.
    expect(events).toContainEqual(expect.objectContaining({ type: 'retry', delayMs: 0, reason: 'timeout_key_done' }));
    expect(clock.sleeps).toEqual([]);
  });

  it('an intent sent again with a different request whose answer is lost: 422 reused, not the stored ticket', async () => {
    // The key's stored answer is the first request's ticket. Only the server can tell whether this request is
    // the one it stored, so the client asks it by sending this request again under the key.
    server.respond((req, res) => {
      if (req.method === 'POST' && server.posts.length === 1) return res.socket?.destroy();
      if (req.method === 'POST')
        return problem(res, 422, 'idempotency_key_reused', { retryable: false, differingFields: ['title'] });
      keyCompleted(res, ticket({ title: 'First' }));
    });
    const error = await client()
      .createTicket({ title: 'Second' }, { intentId: 'replanned' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect(server.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
  });

  it("a key past its replay window: the resend gets the server's 410 naming the ticket", async () => {
    server.respond((req, res) => {
      if (req.method === 'POST' && server.posts.length === 1) return res.socket?.destroy();
      if (req.method === 'POST')
        return problem(res, 410, 'idempotency_key_expired', { retryable: false, ticketId: ticket().id });
      json(res, 200, { key: 'k', state: 'expired', ticketId: ticket().id, createdAt: null, expiresAt: null });
    });
    const error = await client()
      .createTicket({ title: 't' }, { intentId: 'old' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toMatchObject({ code: 'idempotency_key_expired', status: 410 });
    expect((error as PermanentError).problem?.ticketId).toBe(ticket().id);
    expect(server.posts).toHaveLength(2);
  });

  it('when the resend after a done key loses its answer too, backs off and asks again; gives up as unknown at the cap', async () => {
    server.respond((req, res) => {
      if (req.method === 'POST') return res.socket?.destroy();
      keyCompleted(res);
    });
    const error = await client({ maxAttempts: 3 })
      .createTicket({ title: 't' }, { intentId: 'lossy' })
      .catch((e: unknown) => e);

    // Never confirmed for this request: not reported as created, and the caller is told to resend the same intent.
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(server.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST', 'GET', 'POST', 'GET']);
    expect(clock.sleeps).toHaveLength(1);
  });

  it('after a lost connection and an unknown key, resends under the same key', async () => {
    server.respond((req, res, i) => {
      if (req.method === 'POST' && i === 0) return res.socket?.destroy();
      if (req.method === 'GET') return problem(res, 404, 'idempotency_key_not_found');
      json(res, 201, ticket());
    });
    const result = await client().createTicket({ title: 't' });

    expect(result).toMatchObject({ outcome: 'created', attempts: 2, confirmedBy: 'response' });
    expect(server.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
    expect(server.posts[0].headers['idempotency-key']).toBe(server.posts[1].headers['idempotency-key']);
  });

  it('an unknown key does not make the outcome certain: the first request may still land, so a give-up is unknown', async () => {
    server.respond((req, res) => {
      if (req.method === 'GET') return problem(res, 404, 'idempotency_key_not_found');
      if (server.posts.length === 1) return res.socket?.destroy();
      problem(res, 503, 'database_unavailable', { retryable: true }); // known not to have run
    });
    const error = await client({ maxAttempts: 2, keyStrategy: 'random' })
      .createTicket({ title: 't' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(server.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
  });

  it('while the first request is processing, polls the status until it completes', async () => {
    let queries = 0;
    server.respond((req, res) => {
      if (req.method === 'POST' && server.posts.length === 1) return res.socket?.destroy();
      if (req.method === 'POST') return json(res, 201, ticket(), { 'idempotent-replayed': 'true' });
      queries += 1;
      if (queries < 3)
        return json(
          res,
          200,
          { key: 'k', state: 'processing', ticketId: null, createdAt: null, expiresAt: null },
          { 'retry-after': '1' },
        );
      keyCompleted(res);
    });
    const result = await client().createTicket({ title: 't' });
    expect(result.outcome).toBe('created');
    expect(server.posts).toHaveLength(2); // the first, and the one the server answers from its store
    expect(clock.sleeps).toEqual([1_000, 1_000]);
  });

  it('gives up with UnknownOutcomeError (key and intent id attached) when writes and status queries keep failing', async () => {
    server.respond((_req, res) => res.socket?.destroy());
    const store = new InMemoryKeyStore();
    const error = await client({ keyStore: store, maxAttempts: 3, keyStrategy: 'random' })
      .createTicket({ title: 't' }, { intentId: 'lost' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UnknownOutcomeError);
    const unknown = error as UnknownOutcomeError;
    expect(unknown).toMatchObject({ code: 'outcome_unknown', retryable: true, intentId: 'lost', attempts: 3 });
    expect(unknown.idempotencyKey).toMatch(/^ticket-create-\d{8}T\d{6}Z-[0-9a-f]{12}$/);
    // The unfinished intent keeps its key, so the next call of the same intent resends it.
    expect(await store.get('create:lost')).toBe(unknown.idempotencyKey);
    expect(server.posts).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({ type: 'give-up', reason: 'max_attempts_exceeded' });
  });

  it('a later call of the same intent reuses the remembered key and resolves the outcome', async () => {
    const store = new InMemoryKeyStore();
    server.respond((_req, res) => res.socket?.destroy());
    const first = (await client({ keyStore: store, maxAttempts: 1, keyStrategy: 'random' })
      .createTicket({ title: 't' }, { intentId: 'resume' })
      .catch((e: unknown) => e)) as UnknownOutcomeError;

    server.respond((_req, res) => json(res, 201, ticket(), { 'idempotent-replayed': 'true' }));
    const second = await client({ keyStore: store, keyStrategy: 'random' }).createTicket(
      { title: 't' },
      { intentId: 'resume' },
    );
    expect(second.idempotencyKey).toBe(first.idempotencyKey);
    expect(second.outcome).toBe('replayed');
    // A random key cannot be found again from the intent: the store keeps it after the definite outcome.
    expect(await store.get('create:resume')).toBe(first.idempotencyKey);
  });

  it('random keys: the same intent called again after it succeeded sends the same key (one ticket)', async () => {
    const store = new InMemoryKeyStore();
    server.respond((_req, res, i) => json(res, 201, ticket(), i > 0 ? { 'idempotent-replayed': 'true' } : {}));
    const first = await client({ keyStore: store, keyStrategy: 'random' }).createTicket(
      { title: 't' },
      { intentId: 'twice' },
    );
    const again = await client({ keyStore: store, keyStrategy: 'random' }).createTicket(
      { title: 't' },
      { intentId: 'twice' },
    );
    expect(first.outcome).toBe('created');
    expect(again).toMatchObject({ outcome: 'replayed', idempotencyKey: first.idempotencyKey });
    expect(server.posts.map((p) => p.headers['idempotency-key'])).toEqual([
      `"${first.idempotencyKey}"`,
      `"${first.idempotencyKey}"`,
    ]);
  });

  it('random keys: two calls of one intent at once send one key (one ticket)', async () => {
    const store = new InMemoryKeyStore();
    server.respond((_req, res, i) => json(res, 201, ticket(), i > 0 ? { 'idempotent-replayed': 'true' } : {}));
    const c = client({ keyStore: store, keyStrategy: 'random' });
    const both = await Promise.all([
      c.createTicket({ title: 't' }, { intentId: 'at-once' }),
      c.createTicket({ title: 't' }, { intentId: 'at-once' }),
    ]);
    expect(new Set(server.posts.map((p) => p.headers['idempotency-key'])).size).toBe(1);
    expect(both.map((r) => r.idempotencyKey)).toEqual([both[0].idempotencyKey, both[0].idempotencyKey]);
  });

  it('random keys: two clients on one key store, or on two stores of one file, send one key for one intent at once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agent-client-shared-store-'));
    try {
      server.respond((req, res) => {
        const first = server.posts.filter((p) => p.headers['idempotency-key'] === req.headers['idempotency-key']);
        json(res, 201, ticket(), first.length > 1 ? { 'idempotent-replayed': 'true' } : {});
      });
      const shared = new InMemoryKeyStore();
      const path = join(dir, 'keys.json');
      for (const [a, b] of [
        [shared, shared],
        [new FileKeyStore(path), new FileKeyStore(path)],
      ]) {
        server.seen.length = 0;
        const both = await Promise.all(
          [a, b].map((keyStore) =>
            client({ keyStore, keyStrategy: 'random' }).createTicket({ title: 't' }, { intentId: 'two-clients' }),
          ),
        );
        expect(new Set(server.posts.map((p) => p.headers['idempotency-key'])).size).toBe(1);
        expect(both[1].idempotencyKey).toBe(both[0].idempotencyKey);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('derived keys: the store entry goes once the intent has a definite outcome', async () => {
    const store = new InMemoryKeyStore();
    server.respond((_req, res) => json(res, 201, ticket()));
    await client({ keyStore: store }).createTicket({ title: 't' }, { intentId: 'done' });
    expect(await store.get('create:done')).toBeUndefined();
  });

  it('a key store that cannot be used is a permanent error with its cause; a passing failure is retryable; nothing is sent', async () => {
    const broken = {
      get: () =>
        Promise.reject(Object.assign(new Error("ENOTDIR: not a directory, open '/x/keys.json'"), { code: 'ENOTDIR' })),
      set: () => Promise.resolve(),
      delete: () => Promise.resolve(),
    };
    const permanent = await client({ keyStore: broken })
      .createTicket({ title: 't' }, { intentId: 'i' })
      .catch((e: unknown) => e);
    expect(permanent).toBeInstanceOf(PermanentError);
    expect(permanent).toMatchObject({ code: 'key_store_failed', retryable: false });
    expect((permanent as PermanentError).message).toMatch(
      /^The idempotency key store cannot be used \(ENOTDIR: not a directory/,
    );

    // A file that is not a key store (FileKeyStore throws a SyntaxError) waits for a human too.
    const corrupt = {
      ...broken,
      get: () => Promise.reject(new SyntaxError('/x/keys.json is not an idempotency key store file')),
    };
    expect(
      await client({ keyStore: corrupt })
        .createTicket({ title: 't' }, { intentId: 'i' })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(PermanentError);

    const busy = {
      ...broken,
      get: () => Promise.reject(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })),
    };
    const passing = await client({ keyStore: busy })
      .createTicket({ title: 't' }, { intentId: 'i' })
      .catch((e: unknown) => e);
    expect(passing).toBeInstanceOf(RetryableError);
    expect(passing).toMatchObject({ code: 'key_store_failed', retryable: true, intentId: 'i' });
    expect(server.seen).toHaveLength(0);
  });

  it('backs off with full jitter between attempts on 503', async () => {
    server.respond((_req, res, i) =>
      i < 3 ? problem(res, 503, 'database_unavailable', { retryable: true }) : json(res, 201, ticket()),
    );
    const result = await client({ backoff: { baseMs: 100, capMs: 250 } }).createTicket({ title: 't' });
    expect(result.attempts).toBe(4);
    expect(clock.sleeps).toEqual([50, 100, 125]); // 0.5 x min(250, 100 x 2^n)
  });

  it('503s open the breaker; then calls fail fast without a request; a probe after the cool-down closes it', async () => {
    server.respond((_req, res) => problem(res, 503, 'database_unavailable', { retryable: true }));
    const c = client({ maxAttempts: 10, circuitBreaker: { failureThreshold: 3, coolDownMs: 5_000 } });

    const first = await c.createTicket({ title: 't' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RetryableError);
    expect(first).toMatchObject({ code: 'circuit_open', retryable: true });
    expect(server.seen).toHaveLength(3);
    expect(c.circuitState).toBe('open');

    const fast = await c.getTicket('x').catch((e: unknown) => e);
    expect(fast).toMatchObject({ code: 'circuit_open' });
    expect(server.seen).toHaveLength(3);

    await clock.sleep(5_000);
    server.respond((_req, res) => json(res, 201, ticket()));
    expect((await c.createTicket({ title: 't' })).outcome).toBe('created');
    expect(c.circuitState).toBe('closed');
    expect(
      events
        .filter((e) => e.type === 'breaker-state-change')
        .map((e) => (e.type === 'breaker-state-change' ? e.to : '')),
    ).toEqual(['open', 'half-open', 'closed']);
  });

  it('a closed port is a retryable error, not an unknown outcome', async () => {
    const closed = await ScriptedServer.start();
    const baseUrl = closed.url;
    await closed.stop();
    const error = await new TicketClient({ baseUrl, apiKey: 'k', clock, maxAttempts: 2 })
      .createTicket({ title: 't' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryableError);
    expect(error).not.toBeInstanceOf(UnknownOutcomeError);
    // The message names where the calls went and what to check.
    expect((error as RetryableError).message).toBe(
      `Gave up after 2 attempts at ${baseUrl} (last: connection_refused): nothing accepts connections there; is the ticket API running at that address?`,
    );
  });

  it('a host name that does not resolve is named as such, not as a refused connection', async () => {
    const error = await new TicketClient({ baseUrl: 'http://tickets.invalid', apiKey: 'k', clock, maxAttempts: 1 })
      .createTicket({ title: 't' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryableError);
    expect((error as RetryableError).message).toBe(
      'Gave up after 1 attempts at http://tickets.invalid (last: host_not_found): the host name does not resolve; check baseUrl and the DNS',
    );
  });

  it('a read names an unresolvable host the same way', async () => {
    const error = await new TicketClient({ baseUrl: 'http://tickets.invalid', apiKey: 'k', clock, maxAttempts: 1 })
      .getTicket('0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11')
      .catch((e: unknown) => e);
    expect((error as RetryableError).message).toBe(
      'Gave up after 1 attempts at http://tickets.invalid (last: host_not_found): the host name does not resolve; check baseUrl and the DNS',
    );
  });

  it('a lost connection is retried under the same reason for a write and a read', async () => {
    const lost = new Set<string>(); // the first request of each kind loses its connection
    server.respond((req, res) => {
      const kind = `${req.method} ${req.url.split('/').slice(0, 3).join('/')}`;
      if (!lost.has(kind)) {
        lost.add(kind);
        return res.socket?.destroy();
      }
      if (req.url.startsWith('/v1/idempotency-keys/')) return problem(res, 404, 'idempotency_key_not_found');
      json(res, req.method === 'POST' ? 201 : 200, ticket());
    });
    const c = client();
    await c.createTicket({ title: 't' }); // POST lost, its status query lost, POST answered
    await c.getTicket(ticket().id); // GET lost, GET answered
    const retries = events.filter((e) => e.type === 'retry');
    expect(retries.map((e) => [e.operation, e.type === 'retry' && e.reason])).toEqual([
      ['create', 'connection_lost_status_connection_lost'], // what the status query after it met
      ['get', 'connection_lost'],
    ]);
  });

  it('constructor: a missing or empty apiKey, or a baseUrl that is not http(s), is a TypeError that says what to pass', () => {
    const make = (o: Record<string, unknown>) => () =>
      new TicketClient({ baseUrl: server.url, apiKey: 'k', ...o } as TicketClientOptions);
    expect(make({ apiKey: undefined })).toThrow(
      new TypeError(
        "apiKey must be a non-empty string (got undefined): pass the tenant's API key, e.g. from TICKETS_API_KEY",
      ),
    );
    expect(make({ apiKey: '' })).toThrow(/apiKey must be a non-empty string \(got an empty string\)/);
    expect(make({ baseUrl: 'tickets.example.com' })).toThrow(
      new TypeError('baseUrl must be an http(s) URL, got "tickets.example.com"'),
    );
    // fetch would refuse every request to it without connecting, which looks like a lost answer.
    expect(make({ baseUrl: 'http://127.0.0.1:6000' })).toThrow(/baseUrl port 6000 is one the Fetch standard blocks/);
    expect(make({ baseUrl: 'http://127.0.0.1:6000', fetch })).not.toThrow();
  });

  it('constructor: timings and limits that cannot work are a TypeError naming the option; undefined keeps the default', () => {
    const make = (o: Record<string, unknown>) => () =>
      new TicketClient({ baseUrl: server.url, apiKey: 'k', ...o } as TicketClientOptions);
    // 0 would abort every attempt after it left, so every write would end as an unknown outcome.
    expect(make({ attemptTimeoutMs: 0 })).toThrow(
      new TypeError('attemptTimeoutMs must be a positive, finite number of milliseconds, got 0'),
    );
    expect(make({ attemptTimeoutMs: '5000' })).toThrow(/attemptTimeoutMs must be .*, got "5000"/);
    expect(make({ maxTotalTimeMs: -1 })).toThrow(/maxTotalTimeMs must be a positive, finite number/);
    expect(make({ statusPollMs: 0 })).toThrow(/statusPollMs must be a positive, finite number/);
    expect(make({ maxAttempts: Number.NaN })).toThrow(
      /maxAttempts must be a whole number >= 1 \(1: no retries\) or Infinity \(no cap\), got NaN/,
    );
    expect(make({ maxAttempts: 0 })).toThrow(/maxAttempts must be a whole number >= 1/);
    expect(make({ maxAttempts: Infinity })).not.toThrow(); // no cap
    expect(make({ maxTotalTimeMs: Infinity })).toThrow(/maxTotalTimeMs must be a positive, finite number/);
    // 0 would let a persistent call spin on a half-open breaker without waiting.
    expect(make({ backoff: { baseMs: 0 } })).toThrow(/backoff.baseMs must be a positive, finite number/);
    expect(make({ backoff: { baseMs: -5 } })).toThrow(
      /backoff.baseMs must be a positive, finite number of milliseconds, got -5/,
    );
    expect(make({ circuitBreaker: { coolDownMs: Infinity } })).toThrow(/circuitBreaker.coolDownMs/);
    expect(make({ circuitBreaker: { failureRateThreshold: 2 } })).toThrow(
      /circuitBreaker.failureRateThreshold must be in \(0, 1\]/,
    );
    expect(
      make({
        attemptTimeoutMs: undefined,
        maxAttempts: undefined,
        backoff: { baseMs: undefined },
        circuitBreaker: { coolDownMs: undefined },
        retryBudget: { ratio: undefined },
      }),
    ).not.toThrow();
  });

  it('a backoff option given as undefined keeps its default (200 ms), not 1 ms', async () => {
    server.respond((_req, res) => problem(res, 503, 'database_unavailable', { retryable: true }));
    const random = () => 0.999;
    await client({ backoff: { baseMs: undefined }, maxAttempts: 2, random })
      .createTicket({ title: 't' })
      .catch(() => undefined);
    expect(clock.sleeps).toEqual([199]);
  });

  it('stops retrying when the client-wide retry budget is spent', async () => {
    server.respond((_req, res) => problem(res, 503, 'database_unavailable', { retryable: true }));
    const c = client({
      maxAttempts: 10,
      retryBudget: { maxTokens: 2, ratio: 0, minRetriesPerSecond: 0 },
      circuitBreaker: { failureThreshold: 100, minimumCalls: 100 },
    });
    const error = await c.createTicket({ title: 't' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'retry_budget_exhausted', retryable: true });
    expect(server.seen).toHaveLength(3);
    expect(events.some((e) => e.type === 'budget-exhausted')).toBe(true);
  });

  it('cancel: sends the key and reason, reports cancelled then replayed', async () => {
    server.respond((_req, res) => json(res, 200, ticket({ status: 'cancelled' })));
    const c = client();
    const result = await c.cancelTicket('t-1', { intentId: 'cancel-1', reason: 'duplicate' });
    expect(result).toMatchObject({
      outcome: 'cancelled',
      idempotencyKey: deriveIdempotencyKey('cancel', 'cancel-1', 't-1'),
    });
    expect(server.posts[0].url).toBe('/v1/tickets/t-1/cancel');
    expect(JSON.parse(server.posts[0].body)).toEqual({ reason: 'duplicate' });

    server.respond((_req, res) => json(res, 200, ticket({ status: 'cancelled' }), { 'idempotent-replayed': 'true' }));
    expect((await c.cancelTicket('t-1', { intentId: 'cancel-1' })).outcome).toBe('replayed');
  });

  it('reads: getTicket null on 404, findByExternalRef, getRequestStatus unknown on 404', async () => {
    server.respond((req, res) => {
      if (req.url.startsWith('/v1/tickets?'))
        return json(res, 200, { items: req.url.includes('ORD-1') ? [ticket({ externalRef: 'ORD-1' })] : [] });
      if (req.url.startsWith('/v1/idempotency-keys/')) return problem(res, 404, 'idempotency_key_not_found');
      problem(res, 404, 'ticket_not_found');
    });
    const c = client();
    expect(await c.getTicket('missing')).toBeNull();
    expect((await c.findByExternalRef('ORD-1'))?.externalRef).toBe('ORD-1');
    expect(await c.findByExternalRef('ORD 2/x')).toBeNull();
    expect(server.seen.at(-1)?.url).toBe('/v1/tickets?externalRef=ORD%202%2Fx');
    expect(await c.getRequestStatus('a key/with slash')).toEqual({
      key: 'a key/with slash',
      state: 'unknown',
      ticketId: null,
      createdAt: null,
      expiresAt: null,
    });
    // A key with a space goes quoted, as the writes send it in the header (the server reads both alike).
    expect(server.seen.at(-1)?.url).toBe('/v1/idempotency-keys/%22a%20key%2Fwith%20slash%22');
    await c.getRequestStatus('plain-key');
    expect(server.seen.at(-1)?.url).toBe('/v1/idempotency-keys/plain-key');
    await c.getRequestStatus('..'); // a dot segment a URL parser would remove
    expect(server.seen.at(-1)?.url).toBe('/v1/idempotency-keys/%22..%22');
  });

  it('a throwing event handler changes nothing', async () => {
    server.respond((_req, res) => json(res, 201, ticket()));
    const c = client({
      onEvent: () => {
        throw new Error('logger down');
      },
    });
    expect((await c.createTicket({ title: 't' })).outcome).toBe('created');
  });

  it('an aborted call after the request left reports an unknown outcome', async () => {
    server.respond(() => undefined); // never answers
    const controller = new AbortController();
    const pending = client({ attemptTimeoutMs: 5_000 }).createTicket({ title: 't' }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toBeInstanceOf(UnknownOutcomeError);
  });

  describe('breaker classification', () => {
    it('answers lost after the server acted never open the breaker (default settings), and every call gets its ticket', async () => {
      // Every create is processed, then its connection is cut before a byte of the answer: the status query finds
      // the key done, and the resend under it is answered from the server's store.
      const keys = new Set<string | string[] | undefined>();
      server.respond((req, res) => {
        if (req.method !== 'POST') return keyCompleted(res);
        const key = req.headers['idempotency-key'];
        if (!keys.has(key)) {
          keys.add(key);
          return res.socket?.destroy();
        }
        json(res, 201, ticket(), { 'idempotent-replayed': 'true' });
      });
      const c = client();
      for (let i = 0; i < 30; i += 1) {
        const result = await c.createTicket({ title: 't' }, { intentId: `lossy-${i}` });
        expect(result).toMatchObject({ outcome: 'created', confirmedBy: 'status-query', attempts: 2 });
      }
      expect(c.circuitState).toBe('closed');
      expect(events.filter((e) => e.type === 'breaker-state-change')).toEqual([]);
    });

    it('timeouts before any byte of the answer are failures: the breaker opens', async () => {
      server.respond(() => undefined); // accepts, never answers
      const c = client({ attemptTimeoutMs: 50, maxAttempts: 10, circuitBreaker: { failureThreshold: 2 } });
      const error = await c.createTicket({ title: 't' }, { intentId: 'silent' }).catch((e: unknown) => e);
      expect(c.circuitState).toBe('open');
      expect(error).toMatchObject({ retryable: true });
      expect(events).toContainEqual(expect.objectContaining({ type: 'breaker-state-change', to: 'open' }));
    });
  });

  describe('finishWithinMs (the deadline of one tool call)', () => {
    it('waits out an open circuit instead of failing fast, then finishes the intent under the same key', async () => {
      server.respond((_req, res, i) =>
        i < 3 ? problem(res, 503, 'database_unavailable', { retryable: true }) : json(res, 201, ticket()),
      );
      const c = client({ maxAttempts: 10, circuitBreaker: { failureThreshold: 3, coolDownMs: 4_000 } });
      const result = await c.createTicket({ title: 't' }, { intentId: 'outage', finishWithinMs: 30_000 });

      expect(result).toMatchObject({ outcome: 'created', attempts: 4 });
      expect(new Set(server.posts.map((p) => p.headers['idempotency-key'])).size).toBe(1);
      expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(4_000); // the cool-down was waited, not failed
      expect(c.circuitState).toBe('closed');
    });

    it('is not capped by maxAttempts, and waits for retry-budget tokens instead of giving up', async () => {
      server.respond((_req, res, i) =>
        i < 6 ? problem(res, 503, 'database_unavailable', { retryable: true }) : json(res, 201, ticket()),
      );
      const c = client({
        maxAttempts: 2,
        retryBudget: { maxTokens: 1, ratio: 0, minRetriesPerSecond: 1 },
        circuitBreaker: { failureThreshold: 100, minimumCalls: 100 },
      });
      const result = await c.createTicket({ title: 't' }, { intentId: 'patient', finishWithinMs: 30_000 });

      expect(result.attempts).toBe(7);
      expect(clock.sleeps.filter((ms) => ms >= 1_000)).toHaveLength(5); // one token per second after the first
      expect(events.filter((e) => e.type === 'budget-exhausted').length).toBeGreaterThan(0);
    });

    it('waits out 429 and 409 Retry-After within the deadline', async () => {
      server.respond((_req, res, i) => {
        if (i === 0) return problem(res, 429, 'rate_limited', { retryable: true }, { 'retry-after': '3' });
        if (i === 1) return problem(res, 409, 'idempotency_key_in_use', { retryable: true }, { 'retry-after': '1' });
        json(res, 201, ticket());
      });
      const result = await client({ maxAttempts: 1 }).createTicket(
        { title: 't' },
        { intentId: 'polite', finishWithinMs: 30_000 },
      );
      expect(result.attempts).toBe(3);
      expect(clock.sleeps).toEqual([3_000, 1_000]);
    });

    it('at the deadline gives up with an unknown outcome that names the key and intent, after resending and asking the status', async () => {
      server.respond((_req, res) => res.socket?.destroy()); // writes and status queries all lost
      // lostThreshold out of the way: a link that loses everything would rightly open the circuit, tested above.
      const error = await client({ backoff: { baseMs: 200, capMs: 10_000 }, circuitBreaker: { lostThreshold: 1_000 } })
        .createTicket({ title: 't' }, { intentId: 'doomed', finishWithinMs: 5_000 })
        .catch((e: unknown) => e);

      expect(error).toBeInstanceOf(UnknownOutcomeError);
      expect(error).toMatchObject({ idempotencyKey: deriveIdempotencyKey('create', 'doomed'), intentId: 'doomed' });
      expect(events.at(-1)).toMatchObject({ type: 'give-up', reason: 'deadline_exceeded' });
      expect(server.posts.length).toBeGreaterThan(5); // maxAttempts (5) did not stop it
      expect(server.seen.filter((s) => s.method === 'GET')).toHaveLength(server.posts.length); // a status query after each lost write
      expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeLessThan(5_000);
    });

    it('a write that fails fast on an open circuit still names its key and intent', async () => {
      server.respond((_req, res) => problem(res, 503, 'database_unavailable', { retryable: true }));
      const c = client({ maxAttempts: 10, circuitBreaker: { failureThreshold: 1 } });
      await c.createTicket({ title: 't' }, { intentId: 'first' }).catch(() => undefined);
      const error = await c.createTicket({ title: 't' }, { intentId: 'later' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RetryableError);
      expect(error).toMatchObject({
        code: 'circuit_open',
        idempotencyKey: deriveIdempotencyKey('create', 'later'),
        intentId: 'later',
      });
    });
  });
});
