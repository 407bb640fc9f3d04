import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Logger } from '@tickets/logger';
import { stopOnSignals } from '@tickets/startup';
import { RelayService } from '../relay/relay.service';
import { beginDrain } from './http-edge';
import { flushTelemetry } from '@tickets/telemetry';

export interface DrainResult {
  /** Connections still open when the grace ran out (their requests were cut). */
  cutConnections: number;
  ms: number;
}

/**
 * Stops taking work without failing any request already taken: the listening socket closes (new
 * connections are refused, so a balancer or an agent moves to another instance), idle keep-alive
 * connections close now, busy ones close after their answer (Connection: close), and a request that
 * still arrives on an open connection gets 503 shutting_down + Retry-After. Connections still busy
 * after `graceMs` are cut.
 */
export async function drainHttp(app: NestFastifyApplication, graceMs: number): Promise<DrainResult> {
  const t0 = Date.now();
  const fastify = app.getHttpAdapter().getInstance();
  const server = fastify.server;
  beginDrain(fastify);
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // A connection whose answer went out between two checks is idle until the client reads the
  // Connection: close; closing idle ones again keeps that window short.
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
  ]);
  clearInterval(sweep);
  clearTimeout(timer);
  let cutConnections = 0;
  if (timedOut) {
    cutConnections = await new Promise<number>((r) => server.getConnections((_e, n) => r(n ?? 0)));
    server.closeAllConnections();
    await closed;
  }
  return { cutConnections, ms: Date.now() - t0 };
}

/**
 * SIGTERM, SIGINT and SIGHUP (`stopOnSignals`): drain HTTP (bounded by SHUTDOWN_GRACE) while the in-process
 * relay stops (its lock is released, so a standby relay leads at once), then close the app and exit 0 once
 * the last lines are written. A second signal during the drain exits at once (1).
 */
export function installGracefulShutdown(app: NestFastifyApplication, graceMs: number, logger: Logger): void {
  const log = logger.child({ component: 'shutdown' });
  stopOnSignals(
    'ticket-api',
    async () => {
      log.info({ graceMs }, 'draining HTTP and stopping the relay');
      const relayStopped = app.get(RelayService).stop();
      const drain = await drainHttp(app, graceMs);
      if (drain.cutConnections)
        log.warn({ ...drain }, `requests still running after SHUTDOWN_GRACE: ${drain.cutConnections} connections cut`);
      else log.info({ ...drain }, 'HTTP drained: every request in flight answered');
      await relayStopped;
      await app.close();
      await flushTelemetry();
    },
    logger,
  );
}
