import { createServer, type AddressInfo } from 'node:net';

/** A port the OS has just handed out as free on 127.0.0.1 (a random guess can hit a live server or the ephemeral range). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
