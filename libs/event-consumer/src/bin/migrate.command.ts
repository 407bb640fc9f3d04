import { migrate } from '../kit-schema.repository';
import { EXIT, Usage, target, type Command } from './bin-support';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: "create or upgrade the kit's tables in the consumer's database",
  help: [
    'ticket-events migrate [--database-url <url>] [--schema ticket_events]',
    '',
    "Creates the kit's tables (inbox_events, consumer_dead_letters, dead_letter_actions, replays,",
    "replay_partitions, replay_pauses) in their own schema of the consumer's database, or upgrades them to this",
    "kit's version. Each step is applied once, in its own transaction, and recorded in",
    '<schema>.kit_migrations (version, name, checksum). Safe to run from every replica at start: they',
    'take turns on an advisory lock, and a second run changes nothing. Needs CREATE on the database.',
    'Exit codes: 0 migrated or already up to date, 1 failed, 2 wrong usage.',
  ],
  options: {},
  places: ['database-url', 'schema'],
  async run(values, positionals, io) {
    if (positionals.length) throw new Usage(`migrate takes no positional arguments (got "${positionals.join(' ')}")`);
    const t = target(values, { database: true });
    const r = await migrate({ databaseUrl: t.databaseUrl, schema: t.schema });
    if (r.applied.length)
      io.out(
        `migrated schema ${r.schema} to version ${r.version}: applied ${r.applied.map((a) => `${a.version} ${a.name}`).join(', ')}`,
      );
    else io.out(`schema ${r.schema} is up to date (version ${r.version}); nothing to do`);
    return EXIT.ok;
  },
};
