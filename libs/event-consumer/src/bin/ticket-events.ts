#!/usr/bin/env node
// `ticket-events`: the consumer kit's command line (npx ticket-events --help).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BIN,
  EXIT,
  Usage,
  commandHelp,
  sentence,
  explain,
  parse,
  target,
  type Command,
  type Io,
  type Target,
} from './bin-support';
import { deadLettersCommand } from './dead-letters.command';
import { migrateCommand } from './migrate.command';
import { replayCommand } from './replay.command';

const COMMANDS: Command[] = [migrateCommand, replayCommand, deadLettersCommand];

function help(): string {
  return [
    `${BIN} <command> [options]: the @tickets/event-consumer kit's tables, replays and dead letters, in the consumer's own database.`,
    '',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(14)} ${c.summary}`),
    '',
    'The commands read DATABASE_URL, KAFKA_BROKERS, TICKET_EVENTS_TOPIC (default ticket-events) and',
    'EVENT_CONSUMER_SCHEMA (default ticket_events); migrate needs no broker or topic. The flags --database-url,',
    '--brokers, --topic and --schema win over them.',
    `Run \`${BIN} <command> --help\` for a command's options and exit codes; \`${BIN} --version\` for the kit's version.`,
  ].join('\n');
}

/** The installed kit's version, from its package.json (two levels up from dist/bin and from src/bin). */
function version(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  return `${pkg.name} ${pkg.version}`;
}

/** Runs one invocation; resolves to the exit code. */
export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v' || name === 'version') {
    io.out(version());
    return EXIT.ok;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const about = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    io.out(about ? commandHelp(about) : help());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(
      `${BIN}: unknown command "${name}"; the commands are ${COMMANDS.map((c) => c.name).join(', ')}. Run \`${BIN} --help\`.`,
    );
    return EXIT.usage;
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(command, rest);
  } catch (e) {
    io.err(`${BIN} ${name}: ${(e as Error).message}`);
    return EXIT.usage;
  }
  if (parsed.values.help) {
    io.out(commandHelp(command));
    return EXIT.ok;
  }
  try {
    return await command.run(parsed.values, parsed.positionals, io);
  } catch (e) {
    if (e instanceof Usage) {
      io.err(`${BIN} ${name}: ${sentence(e.message)} Run \`${BIN} ${name} --help\`.`);
      return EXIT.usage;
    }
    io.err(`${BIN} ${name}: ${explain(e, targetOf(parsed.values))}`);
    return EXIT.failed;
  }
}

/** Where the command went (flags over the environment), to name it in an error; nothing if it cannot be read. */
function targetOf(values: Parameters<typeof target>[0]): Partial<Target> | undefined {
  try {
    return target(values, {});
  } catch {
    return undefined;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2), {
    out: (l) => process.stdout.write(`${l}\n`),
    err: (l) => process.stderr.write(`${l}\n`),
  }).then((code) => {
    process.exitCode = code;
  });
}
