import pino from 'pino';

type Destination = ReturnType<typeof pino.destination>;

const destinations = new Set<Destination>();
const noop = (): void => undefined;

/**
 * pino's asynchronous destination on fd 1 or 2, registered so that `exitProcess` can settle it.
 *
 * Why not pino's default: pino flushes an asynchronous destination synchronously in the process's
 * 'exit' handler, and sonic-boom's flushSync (4.2.1, the latest pino 10 takes) retries every failed
 * write, not only EAGAIN. With the reader of stdout gone (EPIPE) a line still buffered at
 * `process.exit()` made that handler loop every 100 ms for ever: the API closed its port on SIGTERM
 * and never exited (issue 19). A write error here is never the process's problem: pino turns EPIPE
 * into silence, and any other error is dropped by the listener below instead of crashing.
 */
export function stdioDestination(fd: 1 | 2 = 1): Destination {
  const dest = pino.destination({ dest: fd, sync: false });
  dest.on('error', noop);
  destinations.add(dest);
  return dest;
}

/**
 * Waits until what was logged so far is written (or has failed), at most `boundMs`. A destination that
 * is still stuck then (a reader alive but not reading) is given up: its exit-time flush becomes a no-op.
 */
export async function settleLogs(boundMs = 1_000): Promise<void> {
  await Promise.all([...destinations].map((dest) => settle(dest, boundMs)));
}

function settle(dest: Destination, boundMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      dest.off('drain', done);
      dest.off('error', done);
      // Everything logged until now is out or lost; nothing may hold the exit after this point.
      dest.flushSync = noop;
      resolve();
    };
    if ((dest as { destroyed?: boolean }).destroyed) return resolve();
    const timer = setTimeout(done, boundMs);
    dest.once('drain', done);
    dest.once('error', done);
    try {
      // An empty write: 'drain' comes once every line before it is written (sonic-boom writes in order).
      dest.write('');
    } catch {
      done();
    }
  });
}

/**
 * Ends the process with `code` once its logs are settled (at most `boundMs`), whatever happened to
 * stdout and stderr. Use it instead of `process.exit` wherever a process stops on purpose.
 */
export async function exitProcess(code: number, boundMs = 1_000): Promise<never> {
  await settleLogs(boundMs);
  process.exit(code);
}

/**
 * stdout and stderr are outputs only: a write to a pipe whose reader has gone (EPIPE) must not throw
 * an unhandled 'error' and crash the process in the middle of its shutdown, nor of its work.
 */
export function guardStdio(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') === 0) stream.on('error', noop);
  }
}
