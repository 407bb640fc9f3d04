import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A plain TCP proxy to one server (a Kafka broker, PostgreSQL) that can be cut and restored on the
 * same port: cut() stops listening (connection refused) and destroys every open socket mid-stream,
 * a real network failure as the client sees it, without stopping the shared server behind it.
 * For kafkajs, route every broker connection through it with `socketFactory` (the broker's
 * advertised address would otherwise bypass it). Used by the relay's outage tests and
 * `bench/relay-broker-recovery.ts`.
 */
export class TcpCutProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** Starts (or restores) listening, on the same port as before once one was chosen. */
  async listen(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.once('close', () => {
          this.sockets.delete(s);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Connection refused from now on, and every open connection reset. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /**
   * Reserves a free port without serving it yet (a server that is "down" from the start): the
   * client can be configured with the port before the first listen().
   */
  async reservePort(): Promise<number> {
    await this.listen();
    await this.cut();
    return this.port;
  }
}
