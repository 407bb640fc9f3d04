import './instrument';
import { loadConfigOrExit } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createApiApp } from './app.factory';
import { installGracefulShutdown } from './edge/graceful-shutdown';
import { Database } from './infra/database';
import { pendingMigrations } from './infra/migrations-check';

async function main(): Promise<void> {
  const config = loadConfigOrExit('ticket-api');
  const logger = createLogger(config.logLevel, 'ticket-api');
  const app = await createApiApp(config, logger);
  try {
    const pending = await pendingMigrations(app.get(Database).prisma);
    if (pending.length) {
      logger.fatal({ pending }, `the database is not migrated (${pending.length} pending: ${pending.join(', ')}): run npm run db:migrate`);
      await app.close();
      process.exit(1);
    }
  } catch (err) {
    const u = new URL(config.database.url);
    logger.fatal(
      { err: (err as Error).message },
      `cannot reach the database ${u.host}${u.pathname}: is PostgreSQL running and migrated (npm run db:migrate)? Check DATABASE_URL.`,
    );
    await app.close();
    process.exit(1);
  }
  try {
    await app.listen(config.http.port, config.http.host);
  } catch (err) {
    logger.fatal({ err }, `cannot listen on ${config.http.host}:${config.http.port}: is another process using the port? Set PORT to another one.`);
    process.exit(1);
  }
  installGracefulShutdown(app, config.edge.shutdownGraceMs, logger);
  logger.info({ url: await app.getUrl(), docs: `${await app.getUrl()}/docs` }, 'ticket-api listening');
}

void main();
