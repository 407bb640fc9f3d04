// The outbox relay on its own: `npm run start:relay`. Same relay as the one inside the API
// (RELAY_ENABLED); any number of copies may run, one per database publishes (docs/relay.md).
// It starts and keeps running while the broker or the database is down (it logs one line when
// either becomes unreachable and one when it is back). SIGTERM/SIGINT: the in-flight batch
// finishes or is abandoned unmarked, the lock is released (a standby leads within milliseconds),
// then the process exits 0. /metrics and /health/ready on RELAY_METRICS_PORT (9466; -1: none).
import './instrument';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { loadConfigOrExit } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { serveMetrics, type MetricsEndpoint } from '@tickets/metrics';
import { OutboxRelay, relayOptionsFromConfig } from '@tickets/outbox';
import { flushTelemetry } from '@tickets/telemetry';

const STATS_LOG_INTERVAL_MS = 60_000;

async function main(): Promise<void> {
  const config = loadConfigOrExit('outbox-relay');
  const logger = createLogger(config.logLevel, 'outbox-relay');
  const registry = new Registry();
  const relay = new OutboxRelay(relayOptionsFromConfig(config, logger, { registry }));
  let endpoint: MetricsEndpoint | undefined;
  if (config.relay.metrics) {
    collectDefaultMetrics({ register: registry });
    try {
      endpoint = await serveMetrics(registry, config.relay.metrics, {
        stateKey: 'relay',
        ready: () => {
          const h = relay.health();
          const ok = h.database.state === 'up' && h.broker.state === 'up';
          return { ready: ok, state: ok ? (h.isLeader ? 'leader' : 'standby') : h.database.state === 'up' ? 'broker unreachable' : 'database unreachable' };
        },
      });
    } catch (err) {
      // Publishing matters more than its metrics: a second relay on the same host keeps running.
      logger.error(
        { err },
        `cannot serve /metrics on ${config.relay.metrics.host}:${config.relay.metrics.port}; relaying without it. Set RELAY_METRICS_PORT to a free port (0: any, -1: none)`,
      );
    }
  }

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    clearInterval(statsTimer);
    Promise.all([relay.stop(), endpoint?.close()]).then(
      () => flushTelemetry().then(() => process.exit(0)),
      (err) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);

  const statsTimer = setInterval(() => {
    relay.stats().then(
      (stats) => logger.info({ stats }, 'outbox stats'),
      (err) => logger.warn({ err: (err as Error).message, health: relay.health() }, 'outbox stats unavailable'),
    );
  }, STATS_LOG_INTERVAL_MS);
  statsTimer.unref();

  await relay.start();
  logger.info({ metricsPort: endpoint?.port }, 'outbox relay started (SIGTERM/SIGINT to stop)');
}

main().catch((err) => {
  // Start-up failures before the logger exists: print and exit non-zero.
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
