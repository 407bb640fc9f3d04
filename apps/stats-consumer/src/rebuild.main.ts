import { loadConfigOrExit, loadEventConsumerConfigOrExit } from '@tickets/config';
import { GroupBusyError, resetStatsGroup } from './rebuild';

/** `npm run stats:rebuild` (empty the projection, replay from earliest) or `npm run stats:rebuild -- --replay-only`. */
async function main(): Promise<void> {
  const config = loadConfigOrExit('stats-rebuild');
  const groupId = loadEventConsumerConfigOrExit('stats-rebuild').stats.groupId;
  const replayOnly = process.argv.includes('--replay-only');
  try {
    const r = await resetStatsGroup(
      { brokers: config.kafka.brokers, topic: config.kafka.topic, groupId, databaseUrl: config.database.url },
      { clear: !replayOnly },
    );
    process.stdout.write(
      `${groupId}: offsets reset to earliest on ${config.kafka.topic}` +
        (r.cleared
          ? `; projection emptied, ${r.inboxRowsForgotten} inbox rows forgotten`
          : '; projection kept (replay)') +
        '. Start the stats consumer (npm run start:stats) to rebuild.\n',
    );
  } catch (err) {
    process.stderr.write(`stats-rebuild: ${(err as Error).message}\n`);
    process.exit(err instanceof GroupBusyError ? 3 : 1);
  }
}

void main();
