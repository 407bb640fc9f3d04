import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver answered. */
export interface ReceivedWebhook {
  id: string;
  timestamp: number;
  body: string;
  json: unknown;
  headers: IncomingHttpHeaders;
  /** Signature and timestamp checked against the secret (independently of the sender's code). */
  verified: boolean;
  /** What the receiver answered. */
  status: number;
  at: number;
}

export interface WebhookReceiver {
  url: string;
  /** Every request, including those answered with an error. */
  readonly requests: ReceivedWebhook[];
  /** Requests answered 2xx (verified ones only). */
  readonly deliveries: ReceivedWebhook[];
  /** Answer the next `n` (verified) requests with `status` (default 500) instead of 204. */
  failNext(n: number, status?: number): void;
  /** Forget the scripted failures not used yet. */
  clearFailures(): void;
  /** Resolves with the deliveries once there are at least `n`; rejects after `timeoutMs`. */
  waitForDeliveries(n: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  waitForRequests(n: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

function keyOf(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

/** Standard Webhooks verification, written from the spec rather than imported from the sender. */
export function verifySignature(
  secret: string,
  headers: IncomingHttpHeaders,
  body: string,
  toleranceSeconds = 300,
  nowMs = Date.now(),
): boolean {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof ts !== 'string' || typeof sigs !== 'string' || !/^\d+$/.test(ts)) return false;
  if (Math.abs(nowMs / 1000 - Number(ts)) > toleranceSeconds) return false;
  const expected = createHmac('sha256', keyOf(secret)).update(`${id}.${ts}.${body}`).digest();
  return sigs.split(' ').some((s) => {
    const [version, b64] = s.split(',');
    if (version !== 'v1' || !b64) return false;
    const got = Buffer.from(b64, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

/** A real webhook endpoint on 127.0.0.1:<random port>. */
export async function startWebhookReceiver(opts: {
  secret: string;
  toleranceSeconds?: number;
}): Promise<WebhookReceiver> {
  const requests: ReceivedWebhook[] = [];
  const deliveries: ReceivedWebhook[] = [];
  const failures: number[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = verifySignature(opts.secret, req.headers, body, opts.toleranceSeconds);
      const status = !verified ? 401 : failures.length > 0 ? failures.shift()! : 204;
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const rec: ReceivedWebhook = {
        id: String(req.headers['webhook-id'] ?? ''),
        timestamp: Number(req.headers['webhook-timestamp'] ?? 0),
        body,
        json,
        headers: req.headers,
        verified,
        status,
        at: Date.now(),
      };
      requests.push(rec);
      if (status >= 200 && status < 300) deliveries.push(rec);
      res.writeHead(status).end();
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const waitFor =
    (list: ReceivedWebhook[], what: string) =>
    (n: number, timeoutMs = 15_000) =>
      new Promise<ReceivedWebhook[]>((resolve, reject) => {
        const check = () => {
          if (list.length < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(list);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`webhook receiver: ${list.length} ${what} after ${timeoutMs} ms, expected ${n}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });

  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    deliveries,
    failNext(n, status = 500) {
      for (let i = 0; i < n; i++) failures.push(status);
    },
    clearFailures() {
      failures.length = 0;
    },
    waitForDeliveries: waitFor(deliveries, 'deliveries'),
    waitForRequests: waitFor(requests, 'requests'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
