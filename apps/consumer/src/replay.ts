// `npm run replay -- --group <group> [--topic <topic>] --from earliest|<ISO-8601> [--wait] [--follow]`
import { loadConfigOrExit } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { replayCommand } from './replay/replay.command';

async function main(): Promise<void> {
  const config = loadConfigOrExit('replay');
  const prisma = createPrismaClient(config.database.url, 2, 'tickets-replay');
  try {
    process.exitCode = await replayCommand(process.argv.slice(2), {
      prisma,
      kafka: { brokers: config.kafka.brokers, clientId: `${config.kafka.clientId}-replay` },
      defaultTopic: config.kafka.topic,
      out: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (e) {
    process.stderr.write(`replay: ${(e as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await prisma.$disconnect();
  }
}

void main();
