// The latency benches' webhook endpoint (bench/events-latency.ts, bench/cold-start.ts): it checks every
// Standard Webhooks signature (independently of the sender), answers 204 and stamps each arrival on the wall
// clock (performance.timeOrigin + performance.now(), µs resolution). By default it runs in the bench's own
// process; EVENTS_RECEIVER=process runs it in a small process of its own, whose stamps the load generator's
// timer, sockets and collections cannot hold (it sends its arrivals over IPC every 20 ms and logs its clock
// against the bench's). Measured both ways in alternating runs (docs/benchmarks.md, "The load generator is
// not it"): the same p99s, for 3-5 % of a core more, so the default stays comparable with earlier results.
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { verifyWebhook } from '@tickets/notifications';

export interface Arrival {
  /** performance.now() of the bench's process when the webhook's body had arrived. */
  at: number;
  count: number;
}

export interface ReceiverStats {
  requests: number;
  unverified: number;
  duplicates: number;
}

export interface Receiver {
  arrivals: Map<string, Arrival>;
  stats(): ReceiverStats;
  /** The receiver's process (the bench's own when in-process), for the CPU meter. */
  pid(): number | undefined;
  listen(): Promise<string>;
  close(): Promise<void>;
}

const wallNow = () => performance.timeOrigin + performance.now();

/** Verifies and answers one webhook; `onArrival(ticketId, wall ms)` for each verified body with a ticket id. */
function handler(secret: string, counts: ReceiverStats, onArrival: (ticketId: string, wall: number) => void) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = wallNow();
      counts.requests++;
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verifyWebhook(secret, req.headers, body)) {
        counts.unverified++;
        res.writeHead(401).end();
        return;
      }
      res.writeHead(204).end();
      let ticketId: string | undefined;
      try {
        ticketId = (JSON.parse(body) as { data?: { ticketId?: string } }).data?.ticketId;
      } catch {
        /* counted as a request for nothing */
      }
      if (ticketId) onArrival(ticketId, at);
    });
  };
}

function listenOn(server: ReturnType<typeof createServer>): Promise<number> {
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

type ToParent =
  | { type: 'listening'; port: number }
  | { type: 'arrivals'; batch: [string, number][]; requests: number; unverified: number }
  | { type: 'clock'; id: number; wall: number };
type ToChild = { type: 'clock'; id: number } | { type: 'close' };

/** The child's side: run as `fork(__filename)` with BENCH_RECEIVER_SECRET in its environment. */
async function childMain(): Promise<void> {
  const send = (m: ToParent) => process.send!(m);
  const counts: ReceiverStats = { requests: 0, unverified: 0, duplicates: 0 };
  let batch: [string, number][] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    send({ type: 'arrivals', batch, requests: counts.requests, unverified: counts.unverified });
    batch = [];
  };
  const server = createServer(
    handler(process.env.BENCH_RECEIVER_SECRET!, counts, (ticketId, wall) => {
      batch.push([ticketId, wall]);
      timer ??= setTimeout(flush, 20);
    }),
  );
  process.on('message', (m: ToChild) => {
    if (m.type === 'clock') send({ type: 'clock', id: m.id, wall: wallNow() });
    else {
      if (timer) clearTimeout(timer);
      flush();
      server.closeAllConnections();
      server.close(() => process.disconnect());
    }
  });
  send({ type: 'listening', port: await listenOn(server) });
}

/** Records a verified arrival (the first per ticket; later ones count as duplicates). */
function record(arrivals: Map<string, Arrival>, counts: ReceiverStats, ticketId: string, wall: number): void {
  const a = arrivals.get(ticketId);
  if (a) {
    a.count++;
    counts.duplicates++;
  } else arrivals.set(ticketId, { at: wall - performance.timeOrigin, count: 1 });
}

function inProcess(secret: string): Receiver {
  const arrivals = new Map<string, Arrival>();
  const counts: ReceiverStats = { requests: 0, unverified: 0, duplicates: 0 };
  const server = createServer(handler(secret, counts, (ticketId, wall) => record(arrivals, counts, ticketId, wall)));
  return {
    arrivals,
    stats: () => ({ ...counts }),
    pid: () => undefined,
    listen: async () => `http://127.0.0.1:${await listenOn(server)}/hooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function ownProcess(secret: string, log: (line: string) => void): Receiver {
  const arrivals = new Map<string, Arrival>();
  const counts: ReceiverStats = { requests: 0, unverified: 0, duplicates: 0 };
  let child: ChildProcess | undefined;
  const clockReplies = new Map<number, (wall: number) => void>();
  const onMessage = (m: ToParent) => {
    if (m.type === 'arrivals') {
      counts.requests = m.requests;
      counts.unverified = m.unverified;
      for (const [ticketId, wall] of m.batch) record(arrivals, counts, ticketId, wall);
    } else if (m.type === 'clock') clockReplies.get(m.id)?.(m.wall);
  };
  /** The child's wall clock against ours: its stamp minus the midpoint of our request and its reply. */
  const clockSkew = async () => {
    let best = { rtt: Infinity, skew: 0 };
    for (let id = 0; id < 20; id++) {
      const sent = wallNow();
      const wall = await new Promise<number>((resolve) => {
        clockReplies.set(id, resolve);
        child!.send({ type: 'clock', id } satisfies ToChild);
      });
      const back = wallNow();
      if (back - sent < best.rtt) best = { rtt: back - sent, skew: wall - (sent + back) / 2 };
    }
    return best;
  };
  return {
    arrivals,
    stats: () => ({ ...counts }),
    pid: () => child?.pid,
    listen: async () => {
      child = fork(__filename, [], {
        env: { ...process.env, BENCH_RECEIVER_SECRET: secret },
        execArgv: ['--max-old-space-size=64', '--max-semi-space-size=4'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.on('message', onMessage);
      const port = await new Promise<number>((resolve, reject) => {
        child!.once('exit', (code) => reject(new Error(`the webhook receiver exited with ${code} before listening`)));
        child!.once('message', (m: ToParent) => m.type === 'listening' && resolve(m.port));
      });
      const { rtt, skew } = await clockSkew();
      log(
        `webhook receiver: its own process (pid ${child.pid}); its clock against the bench's ${skew.toFixed(3)} ms (IPC round trip ${rtt.toFixed(3)} ms)`,
      );
      return `http://127.0.0.1:${port}/hooks`;
    },
    close: async () => {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      child.send({ type: 'close' } satisfies ToChild);
      await exited;
    },
  };
}

/** The webhook endpoint: in this process unless EVENTS_RECEIVER=process. */
export function startReceiver(secret: string, log: (line: string) => void = () => undefined): Receiver {
  const where = process.env.EVENTS_RECEIVER ?? 'in-process';
  if (where === 'process') return ownProcess(secret, log);
  if (where !== 'in-process') throw new Error(`EVENTS_RECEIVER=${where}: in-process (the default) or process`);
  return inProcess(secret);
}

if (require.main === module && process.send) void childMain();
