import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpPoster } from './http-post';

let server: Server;
let base: string;
let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void;
const sockets = new Set<unknown>();
const poster = new HttpPoster();

beforeAll(async () => {
  server = createServer((req, res) => {
    sockets.add(req.socket);
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  poster.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('HttpPoster', () => {
  it('sends the body and headers, returns status and headers, and reuses the connection', async () => {
    const seen: { headers: IncomingMessage['headers']; body: string }[] = [];
    handler = (req, res, body) => {
      seen.push({ headers: req.headers, body });
      res.writeHead(503, { 'retry-after': '7' }).end('busy, with a body the caller never reads');
    };
    sockets.clear();
    const body = JSON.stringify({ ünïcode: '✓' });
    const first = await poster.post(
      `${base}/hook`,
      { 'content-type': 'application/json', 'webhook-id': 'n1' },
      body,
      2000,
    );
    const second = await poster.post(`${base}/hook`, { 'webhook-id': 'n2' }, body, 2000);
    expect(first).toMatchObject({ statusCode: 503, headers: { 'retry-after': '7' } });
    expect(second.statusCode).toBe(503);
    expect(seen.map((s) => [s.headers['webhook-id'], s.body, s.headers['content-length']])).toEqual([
      ['n1', body, String(Buffer.byteLength(body))],
      ['n2', body, String(Buffer.byteLength(body))],
    ]);
    expect(sockets.size).toBe(1); // keep-alive: the second request rode the first one's connection
  });

  it('does not follow a redirect', async () => {
    handler = (_req, res) => res.writeHead(302, { location: '/elsewhere' }).end();
    expect(await poster.post(`${base}/hook`, {}, '{}', 2000)).toMatchObject({
      statusCode: 302,
      headers: { location: '/elsewhere' },
    });
  });

  it('reports a timeout when no response comes in time', async () => {
    handler = (_req, res) => setTimeout(() => res.writeHead(200).end(), 1500);
    // The server would answer 200 later: the result is the timeout, not that answer.
    expect(await poster.post(`${base}/slow`, {}, '{}', 200)).toEqual({
      statusCode: null,
      headers: {},
      error: 'timeout after 200 ms',
    });
  });

  it('reports a refused connection, a bad URL and another protocol as network errors, without throwing', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    expect(await poster.post(`http://127.0.0.1:${port}/`, {}, '{}', 2000)).toEqual({
      statusCode: null,
      headers: {},
      error: 'network error: ECONNREFUSED',
    });
    expect((await poster.post('not a url', {}, '{}', 2000)).error).toMatch(/^network error: invalid URL/);
    expect((await poster.post('ftp://127.0.0.1/x', {}, '{}', 2000)).error).toBe(
      'network error: unsupported protocol ftp:',
    );
  });
});
