import type { Server } from 'node:net';
import { PortUnavailableError, type PortSetting } from './startup-failure';

const PORT_ERRORS = new Set(['EADDRINUSE', 'EACCES', 'EPERM', 'EADDRNOTAVAIL']);

/**
 * `server.listen(port, host)` for a port of our own: a port that is taken, privileged or on an address
 * this host does not have rejects with a PortUnavailableError that names the variable moving it.
 * Port 0 takes any free port; read it back from `server.address()`.
 */
export function listen(server: Server, at: PortSetting): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(err.code && PORT_ERRORS.has(err.code) ? new PortUnavailableError(err, at) : err);
    server.once('error', onError);
    server.listen(at.port, at.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
