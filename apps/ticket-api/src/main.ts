import './instrument';
import { loadConfigOrExit } from '@tickets/config';
import { createLogger, guardStdio } from '@tickets/logger';
import { failStartup, type StartupContext } from '@tickets/startup';
import { createApiApp } from './app.factory';
import { installGracefulShutdown } from './edge/graceful-shutdown';
import { Database } from './infra/database';
import { pendingMigrations } from './infra/migrations-check';

guardStdio();

class MigrationsPendingError extends Error {
  override name = 'MigrationsPendingError';
}

async function main(): Promise<void> {
  const config = loadConfigOrExit('ticket-api');
  const logger = createLogger(config.logLevel, 'ticket-api', undefined, config.logFormat);
  const ctx: StartupContext = {
    ports: [
      { variable: 'PORT', hostVariable: 'HOST', port: config.http.port, host: config.http.host },
      ...(config.console.token
        ? [{ variable: 'ADMIN_PORT', hostVariable: 'ADMIN_HOST', port: config.console.port, host: config.console.host }]
        : []),
    ],
    databaseUrl: config.database.url,
    brokers: config.kafka.brokers,
  };
  try {
    const app = await createApiApp(config, logger);
    const pending = await pendingMigrations(app.get(Database).prisma);
    if (pending.length) throw new MigrationsPendingError(`${pending.length} pending: ${pending.join(', ')}`);
    await app.listen(config.http.port, config.http.host);
    installGracefulShutdown(app, config.edge.shutdownGraceMs, logger);
    logger.info({ url: await app.getUrl(), docs: `${await app.getUrl()}/docs` }, 'ticket-api listening');
  } catch (err) {
    await failStartup('ticket-api', err, ctx, logger);
  }
}

void main();
