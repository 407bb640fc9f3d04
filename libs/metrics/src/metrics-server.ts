import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { listen } from '@tickets/startup';

export interface Readiness {
  ready: boolean;
  state: string;
}

export interface MetricsEndpoint {
  /** The bound port (the one the OS chose when asked for port 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `registry` as GET /metrics, and GET /health/ready (200 while `ready()`, else 503 with the
 * state under `stateKey`), on host:port of a small HTTP server of its own: the processes without an HTTP API (the
 * consumers, the standalone relay, the MCP server) expose their metrics this way. A port that is taken
 * rejects with a PortUnavailableError naming `at.variable` (port 0: any free port, see `port`).
 */
export async function serveMetrics(
  registry: Registry,
  at: { port: number; host: string; variable?: string },
  health: { ready?: () => Readiness; stateKey?: string } = {},
): Promise<MetricsEndpoint> {
  const { ready = () => ({ ready: true, state: 'running' }), stateKey = 'state' } = health;
  const server: HttpServer = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && path === '/health/ready') {
      const r = ready();
      res
        .writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ status: r.ready ? 'ready' : 'not_ready', [stateKey]: r.state })}\n`);
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics or /health/ready\n');
      return;
    }
    registry
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text))
      .catch((err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`));
  });
  await listen(server, at);
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
