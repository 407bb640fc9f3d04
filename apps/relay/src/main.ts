// The outbox relay on its own: `npm run start:relay`. Same relay as the one inside the API
// (RELAY_ENABLED); any number of copies may run, one per database publishes (docs/relay.md).
// It starts and keeps running while the broker or the database is down (it logs one line when
// either becomes unreachable and one when it is back). SIGTERM, SIGINT or SIGHUP (`stopOnSignals`):
// the in-flight batch finishes or is abandoned unmarked, the lock is released (a standby leads
// within milliseconds), then the process exits 0 once its last lines are written. /metrics and
// /health/ready on RELAY_METRICS_PORT (9466; 0: any free port; -1: none).
import './instrument';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { loadConfigOrExit, type AppConfig } from '@tickets/config';
import { createLogger, guardStdio, type Logger } from '@tickets/logger';
import { serveMetrics, type MetricsEndpoint } from '@tickets/metrics';
import { OutboxRelay, relayOptionsFromConfig } from '@tickets/outbox';
import { failStartup, stopOnSignals, type StartupContext } from '@tickets/startup';
import { flushTelemetry } from '@tickets/telemetry';

const STATS_LOG_INTERVAL_MS = 60_000;

guardStdio();

async function main(): Promise<void> {
  const config = loadConfigOrExit('outbox-relay');
  const logger = createLogger(config.logLevel, 'outbox-relay', undefined, config.logFormat);
  const ctx: StartupContext = {
    ports: config.relay.metrics ? [{ variable: 'RELAY_METRICS_PORT', ...config.relay.metrics }] : [],
    databaseUrl: config.database.url,
    brokers: config.kafka.brokers,
  };
  try {
    await run(config, logger);
  } catch (err) {
    await failStartup('outbox-relay', err, ctx, logger);
  }
}

async function run(config: AppConfig, logger: Logger): Promise<void> {
  const registry = new Registry();
  const relay = new OutboxRelay(relayOptionsFromConfig(config, logger, { registry }));
  let endpoint: MetricsEndpoint | undefined;
  if (config.relay.metrics) {
    collectDefaultMetrics({ register: registry });
    // A taken port stops the start (one line naming RELAY_METRICS_PORT): a second relay on this host
    // takes RELAY_METRICS_PORT=0 (any free port, logged below) or -1 (none).
    endpoint = await serveMetrics(
      registry,
      { ...config.relay.metrics, variable: 'RELAY_METRICS_PORT' },
      {
        stateKey: 'relay',
        ready: () => {
          const h = relay.health();
          const ok = h.database.state === 'up' && h.broker.state === 'up';
          return {
            ready: ok,
            state: ok
              ? h.isLeader
                ? 'leader'
                : 'standby'
              : h.database.state === 'up'
                ? 'broker unreachable'
                : 'database unreachable',
          };
        },
      },
    );
  }

  const statsTimer = setInterval(() => {
    relay.stats().then(
      (stats) => logger.info({ stats }, 'outbox stats'),
      (err) => logger.warn({ err: (err as Error).message, health: relay.health() }, 'outbox stats unavailable'),
    );
  }, STATS_LOG_INTERVAL_MS);
  statsTimer.unref();
  stopOnSignals(
    'outbox-relay',
    async () => {
      clearInterval(statsTimer);
      await Promise.all([relay.stop(), endpoint?.close()]);
      await flushTelemetry();
    },
    logger,
  );

  await relay.start();
  logger.info({ metricsPort: endpoint?.port }, 'outbox relay started (SIGTERM/SIGINT to stop)');
}

void main();
