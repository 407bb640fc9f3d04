// Shared by `npm run demo` (scripts/demo.ts) and the e2e tests (test/e2e/agent-client.e2e-spec.ts, test/e2e/mcp-lossy-link.e2e-spec.ts).
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * What the proxy does to one HTTP exchange:
 * - `pass`: forward both ways.
 * - `drop-response`: forward the request; when the server's answer starts arriving (so the server
 *   has processed it), destroy the client's socket. The client sees "socket hang up".
 * - `reset-response`: forward the request; let the server send its whole answer to the proxy, then
 *   reset the client's connection (TCP RST) without relaying a byte. The work is certainly done.
 * - `delay-response`: forward the request; hold the answer for `delayMs` (past the client's timeout).
 * - `reset`: answer the request with a TCP RST before it reaches the server (never processed).
 */
export type Fault = 'pass' | 'drop-response' | 'reset-response' | 'delay-response' | 'reset';

export interface ExchangeInfo {
  index: number;
  method: string;
  path: string;
  /** The request's Idempotency-Key header as sent, if any. */
  idempotencyKey?: string;
}

export interface FaultRates {
  dropResponse?: number;
  resetResponse?: number;
  delayResponse?: number;
  reset?: number;
}

export interface FaultProxyOptions {
  /** Base URL of the real server, e.g. `http://127.0.0.1:3000`. */
  target: string;
  /** Probabilities per exchange (drawn once per exchange with `random`). Default: no faults. */
  rates?: FaultRates;
  /** How long `delay-response` holds an answer. Default 2 s. */
  delayMs?: number;
  random?: () => number;
  /** Decides the fault per exchange; overrides `rates` when set. */
  decide?: (exchange: ExchangeInfo) => Fault;
}

export interface FaultProxyStats {
  exchanges: number;
  /** POSTs the proxy saw from clients (including reset ones). */
  posts: number;
  /** POSTs that reached the server. */
  postsForwarded: number;
  faults: Record<Fault, number>;
  exchangesLog: Array<ExchangeInfo & { fault: Fault }>;
}

const MAX_HEAD_BYTES = 64 * 1024;

/**
 * A fault-injecting TCP proxy for HTTP/1.1 between a client and a real server (node:net, real
 * sockets). One exchange per connection: the proxy rewrites the request head to
 * `Connection: close`, so the server answers with `Connection: close` and the client never reuses
 * a connection. That keeps "one fault per exchange" exact with keep-alive clients (undici).
 */
export class FaultProxy {
  readonly stats: FaultProxyStats = newStats();
  private readonly targetHost: string;
  private readonly targetPort: number;
  private server: Server;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(private options: FaultProxyOptions) {
    const url = new URL(options.target);
    this.targetHost = url.hostname;
    this.targetPort = Number(url.port || 80);
    this.server = this.newServer();
  }

  static async start(options: FaultProxyOptions, port = 0): Promise<FaultProxy> {
    const proxy = new FaultProxy(options);
    await proxy.listen(port);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Changes the faults from now on. */
  configure(options: Partial<Omit<FaultProxyOptions, 'target'>>): void {
    this.options = { ...this.options, ...options };
  }

  resetStats(): void {
    Object.assign(this.stats, newStats());
  }

  /** Simulates the server going down: stop listening (connection refused) and cut open connections. */
  async down(): Promise<void> {
    await this.closeServer();
  }

  /** Back up, on the same port. */
  async up(): Promise<void> {
    this.server = this.newServer();
    await this.listen(this.port);
  }

  async stop(): Promise<void> {
    await this.closeServer();
  }

  private async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address();
    if (address && typeof address === 'object') this.port = address.port;
  }

  private async closeServer(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private newServer(): Server {
    return createServer((client) => this.handle(client));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined); // resets and hang-ups are the point here
  }

  private handle(client: Socket): void {
    this.track(client);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) client.destroy();
        return;
      }
      client.off('data', onData);
      client.pause();
      this.exchange(client, head.subarray(0, end), head.subarray(end + 4));
    };
    client.on('data', onData);
  }

  private exchange(client: Socket, head: Buffer, rest: Buffer): void {
    const [requestLine, ...headerLines] = head.toString('latin1').split('\r\n');
    const [method = '', path = ''] = requestLine.split(' ');
    const keyLine = headerLines.find((line) => /^idempotency-key\s*:/i.test(line));
    const info: ExchangeInfo = {
      index: this.stats.exchanges,
      method,
      path,
      idempotencyKey: keyLine?.replace(/^[^:]*:\s*/, '').trim(),
    };
    this.stats.exchanges += 1;
    if (method === 'POST') this.stats.posts += 1;
    const fault = this.decide(info);
    this.stats.faults[fault] += 1;
    this.stats.exchangesLog.push({ ...info, fault });

    if (fault === 'reset') {
      client.resetAndDestroy();
      return;
    }
    if (method === 'POST') this.stats.postsForwarded += 1;

    const kept = headerLines.filter((line) => !/^(connection|keep-alive|proxy-connection)\s*:/i.test(line));
    const rewritten = Buffer.from([requestLine, ...kept, 'Connection: close', '', ''].join('\r\n'), 'latin1');
    const upstream = connect(this.targetPort, this.targetHost);
    this.track(upstream);
    upstream.write(Buffer.concat([rewritten, rest]));
    client.pipe(upstream);
    client.resume();
    client.once('close', () => {
      // A client that gave up (timeout) must not leave the upstream request half-sent.
      if (fault !== 'delay-response') upstream.destroy();
    });
    upstream.once('close', () => {
      if (fault === 'pass') client.end();
    });

    if (fault === 'pass') {
      upstream.pipe(client);
      return;
    }
    if (fault === 'drop-response') {
      upstream.once('data', () => {
        client.destroy();
        upstream.destroy();
      });
      return;
    }
    if (fault === 'reset-response') {
      upstream.resume(); // read the answer to its end (Connection: close), relay none of it
      upstream.once('close', () => {
        if (!client.destroyed) client.resetAndDestroy();
      });
      return;
    }
    // delay-response: collect the whole answer, release it after delayMs.
    const held: Buffer[] = [];
    let ended = false;
    let released = false;
    const flush = (): void => {
      if (client.destroyed) return;
      for (const chunk of held) client.write(chunk);
      held.length = 0;
      if (ended) client.end();
    };
    upstream.on('data', (chunk: Buffer) => {
      if (released) client.write(chunk);
      else held.push(chunk);
    });
    upstream.once('end', () => {
      ended = true;
      if (released) client.end();
    });
    upstream.once('data', () => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        released = true;
        flush();
      }, this.options.delayMs ?? 2_000);
      this.timers.add(timer);
    });
  }

  private decide(info: ExchangeInfo): Fault {
    if (this.options.decide) return this.options.decide(info);
    const rates = this.options.rates ?? {};
    const r = (this.options.random ?? Math.random)();
    let edge = rates.dropResponse ?? 0;
    if (r < edge) return 'drop-response';
    edge += rates.resetResponse ?? 0;
    if (r < edge) return 'reset-response';
    edge += rates.delayResponse ?? 0;
    if (r < edge) return 'delay-response';
    edge += rates.reset ?? 0;
    if (r < edge) return 'reset';
    return 'pass';
  }
}

function newStats(): FaultProxyStats {
  return {
    exchanges: 0,
    posts: 0,
    postsForwarded: 0,
    faults: { pass: 0, 'drop-response': 0, 'reset-response': 0, 'delay-response': 0, reset: 0 },
    exchangesLog: [],
  };
}
