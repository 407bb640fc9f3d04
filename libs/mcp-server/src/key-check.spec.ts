import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkApiKey } from './key-check';

describe('checkApiKey: only a 401 refuses the key', () => {
  let server: Server;
  let url: string;
  let answer: (path: string, auth: string | undefined) => { status: number; body?: string } | 'hang';
  const seen: Array<{ path: string; auth?: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ path: req.url ?? '', auth: req.headers.authorization });
      const a = answer(req.url ?? '', req.headers.authorization);
      if (a === 'hang') return;
      res.writeHead(a.status, { 'content-type': 'application/problem+json' }).end(a.body ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('asks for a ticket nobody has, with the key as a bearer token: 404 means the key is taken', async () => {
    answer = () => ({ status: 404, body: '{"code":"ticket_not_found"}' });
    expect(await checkApiKey(url, 'tk_good')).toEqual({ verdict: 'taken' });
    expect(seen.at(-1)).toEqual({ path: '/v1/tickets/00000000-0000-0000-0000-000000000000', auth: 'Bearer tk_good' });
  });

  it('401: refused, with the problem code', async () => {
    answer = () => ({ status: 401, body: '{"code":"unauthorized","retryable":false}' });
    expect(await checkApiKey(url, 'tk_bad')).toEqual({ verdict: 'refused', detail: '401 unauthorized' });
  });

  it('anything else leaves it open: a 503, no answer in time, nobody listening', async () => {
    answer = () => ({ status: 503, body: '{"code":"not_ready"}' });
    expect(await checkApiKey(url, 'tk')).toEqual({ verdict: 'unknown', detail: 'the API answered 503 not_ready' });
    answer = () => 'hang';
    expect(await checkApiKey(url, 'tk', 200)).toEqual({ verdict: 'unknown', detail: 'no answer within 200 ms' });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await checkApiKey(`http://127.0.0.1:${port}`, 'tk')).toEqual({ verdict: 'unknown', detail: 'ECONNREFUSED' });
  });
});
