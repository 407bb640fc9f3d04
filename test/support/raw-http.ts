import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server wrote, for messages. */
  raw: string;
}

/**
 * Writes `request` to a fresh TCP connection and reads until the server closes it (requests here
 * send `Connection: close` or are ones the server must close). Resolves with status 0 when the server
 * closed without a byte. `waitMs` bounds a hung server so the test fails instead of hanging.
 */
export function rawRequest(
  url: string,
  request: string | Buffer,
  { waitMs = 30_000, endAfterWrite = false } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${waitMs} ms; got: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, waitMs);
    socket.on('connect', () => {
      socket.write(request);
      // Half-close: the server answers what it read, then closes (Node's HTTP server allows half-open sockets).
      if (endAfterWrite) socket.end();
    });
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => undefined); // a reset after the answer still leaves the bytes we read
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks).toString('latin1')));
    });
  });
}

/** Every response in `raw` (pipelined answers, 100 Continue), in order; `rest` is what did not parse. */
export function parseResponses(raw: string): { responses: RawResponse[]; rest: string } {
  const responses: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/') && rest.includes('\r\n\r\n')) {
    const r = parseResponse(rest);
    responses.push(r);
    const head = rest.indexOf('\r\n\r\n') + 4;
    const length =
      r.status < 200
        ? 0
        : r.headers['transfer-encoding'] === 'chunked'
          ? chunkedLength(rest.slice(head))
          : Number(r.headers['content-length'] ?? rest.length);
    rest = rest.slice(head + length);
  }
  return { responses, rest };
}

function chunkedLength(s: string): number {
  let i = 0;
  for (;;) {
    const eol = s.indexOf('\r\n', i);
    if (eol < 0) return s.length;
    const n = parseInt(s.slice(i, eol), 16);
    i = eol + 2 + (n || 0) + 2;
    if (!n) return Math.min(i, s.length);
  }
}

export function parseResponse(raw: string): RawResponse {
  const head = raw.indexOf('\r\n\r\n');
  if (!raw.startsWith('HTTP/')) return { status: 0, headers: {}, body: '', raw };
  const lines = raw.slice(0, head).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = raw.slice(head + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  else if (headers['content-length']) body = body.slice(0, Number(headers['content-length']));
  return { status: Number(lines[0].split(' ')[1]), headers, body, raw };
}

function dechunk(s: string): string {
  let out = '';
  for (let i = 0; ;) {
    const eol = s.indexOf('\r\n', i);
    const n = parseInt(s.slice(i, eol), 16);
    if (!n) return out;
    out += s.slice(eol + 2, eol + 2 + n);
    i = eol + 2 + n + 2;
  }
}
