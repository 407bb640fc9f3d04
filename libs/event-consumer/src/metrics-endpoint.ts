import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface Readiness {
  ready: boolean;
  state: string;
}

export interface MetricsEndpoint {
  /** The bound port (the one the OS chose when asked for port 0). */
  port: number;
  close(): Promise<void>;
}

/** The metrics port is taken (or not allowed): says which port, and which setting moves it. */
export class MetricsPortError extends Error {
  override name = 'MetricsPortError';
}

/**
 * Serves GET /metrics and GET /health/ready (200 while `ready()`, else 503 with the state) on
 * host:port; port 0 binds any free port. A port already in use is a MetricsPortError naming it.
 */
export async function serveMetrics(
  registry: Registry,
  at: { port: number; host: string },
  ready: () => Readiness,
  setting: string,
): Promise<MetricsEndpoint> {
  const server: HttpServer = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && path === '/health/ready') {
      const r = ready();
      res
        .writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ status: r.ready ? 'ready' : 'not_ready', consumer: r.state })}\n`);
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        const why =
          err.code === 'EADDRINUSE'
            ? 'is already in use (another consumer on this host?)'
            : 'is not allowed for this user';
        reject(
          new MetricsPortError(
            `metrics port ${at.host}:${at.port} ${why}: set ${setting} to a free port, 0 = any free port, or turn the endpoint off (metrics: false / -1)`,
            { cause: err },
          ),
        );
      } else reject(err);
    });
    server.listen(at.port, at.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
