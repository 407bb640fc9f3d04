import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface PostResult {
  /** null: no response (timeout, refused, reset, DNS ...); `error` says which. */
  statusCode: number | null;
  headers: IncomingHttpHeaders;
  /** For a missing response: `timeout after N ms` or `network error: <code>`. */
  error?: string;
}

/** The error of a request given up by its caller (a stopping dispatcher). */
export const ABANDONED = 'abandoned: the dispatcher stopped before an answer came';

/**
 * POSTs a body with `node:http`/`node:https` over keep-alive connections and never throws. Redirects
 * are not followed (a 3xx is the receiver's answer), the response body is discarded.
 *
 * Not `fetch`: undici's fetch cost ~250 µs of CPU per webhook on this machine against ~60 µs for
 * `http.request` (client and server in one process, warm; docs/consumer.md), and at a steady rate
 * the dispatcher's requests are a large part of the consumer's CPU.
 */
export class HttpPoster {
  private readonly http = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  private readonly https = new HttpsAgent({ keepAlive: true, maxSockets: 64 });

  /**
   * `timeoutMs` covers the request up to the response headers; a body still arriving after it is cut off.
   * `signal` abandons the request (statusCode null, error `abandoned`): the receiver may or may not have it.
   */
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<PostResult> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve({
        statusCode: null,
        headers: {},
        error: `network error: invalid URL ${JSON.stringify(url)}`,
      });
    }
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') {
      return Promise.resolve({
        statusCode: null,
        headers: {},
        error: `network error: unsupported protocol ${target.protocol}`,
      });
    }
    const payload = Buffer.from(body, 'utf8');
    return new Promise<PostResult>((resolve) => {
      let settled = false;
      const settle = (r: PostResult) => {
        if (settled) return;
        settled = true;
        resolve(r);
      };
      const req = (secure ? httpsRequest : httpRequest)(
        target,
        {
          method: 'POST',
          agent: secure ? this.https : this.http,
          headers: { ...headers, 'content-length': String(payload.length) },
        },
        (res) => {
          // Drained, not read: the connection goes back to the pool once the body has passed.
          res.resume();
          res.on('error', () => undefined);
          res.on('close', () => clearTimeout(timer));
          settle({ statusCode: res.statusCode ?? null, headers: res.headers });
        },
      );
      const timer = setTimeout(() => {
        settle({ statusCode: null, headers: {}, error: `timeout after ${timeoutMs} ms` });
        req.destroy();
      }, timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        settle({ statusCode: null, headers: {}, error: `network error: ${err.code ?? err.message}` });
      });
      const abandon = () => {
        clearTimeout(timer);
        settle({ statusCode: null, headers: {}, error: ABANDONED });
        req.destroy();
      };
      if (signal?.aborted) abandon();
      signal?.addEventListener('abort', abandon, { once: true });
      req.once('close', () => signal?.removeEventListener('abort', abandon));
      req.end(payload);
    });
  }

  /** Closes the pooled connections. */
  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}
