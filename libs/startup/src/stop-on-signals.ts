import { exitProcess, type Logger } from '@tickets/logger';

/**
 * SIGTERM, SIGINT and SIGHUP stop the process through `close` (the API's: HTTP drained and its relay stopped; the
 * relay's: the batch in flight ended and the lock released; a consumer's Nest microservice: the kit's chunk in
 * progress commits, the group is left, the shutdown hooks run), then exit 0 once every line logged is written
 * ("<name> stopped" last), or 1 if `close` failed. A second signal while stopping exits at once (1). `stopping()` tells a start that
 * failed whether a signal ended it (then this function exits, and the start need not report a failure).
 *
 * Why not Nest's `enableShutdownHooks()`: it ends by raising the signal again, which kills the process
 * while the asynchronous log destination still holds the last lines (the kit's "event consumer stopped",
 * this function's "<name> stopped"), so an operator could not tell a clean stop from a crash.
 */
export function stopOnSignals(
  processName: string,
  close: () => Promise<void>,
  logger: Logger,
): { stopping(): boolean } {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, `second signal while stopping: ${processName} exits now`);
      void exitProcess(1, 200);
      return;
    }
    stopping = true;
    logger.info({ signal }, `${processName} stopping`);
    close().then(
      async () => {
        logger.info(`${processName} stopped`);
        await exitProcess(0);
      },
      async (err: unknown) => {
        logger.error({ err }, `${processName} failed to stop cleanly`);
        await exitProcess(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // A closed terminal (npm start or npm run start:<process> in it): the same graceful stop, not a kill mid-chunk
  // or mid-request.
  process.on('SIGHUP', onSignal);
  return { stopping: () => stopping };
}
