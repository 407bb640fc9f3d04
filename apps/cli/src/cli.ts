import { CLI, cliHelp, commandHelp, parseCommandLine, type CliCommand, type CliContext } from './command-line';

export interface CliIo {
  /** stdout, one line. */
  out(line: string): void;
  /** stderr, as given. */
  err(text: string): void;
  /** Loads the configuration and connects to the database; called only once the arguments are valid. */
  open(): Promise<{ ctx: CliContext; close(): Promise<void> }>;
  /** One line for a failed command (main.ts: the real cause of a database or broker failure); default: the error's message. */
  describe?(error: unknown): string;
}

/**
 * Runs one CLI invocation: picks the command, parses its arguments (help and usage errors need no
 * configuration and no database), then runs it. Resolves to the exit code.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command parses its own argument type; the table holds them all
export async function runCli(argv: string[], commands: Array<CliCommand<any>>, io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    const about = name === 'help' && rest[0] ? commands.find((c) => c.name === rest[0]) : undefined;
    io.out(about ? commandHelp(about) : cliHelp(commands));
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const what =
      name === undefined
        ? 'name a command'
        : name.startsWith('-')
          ? `unknown option ${name} (options go after the command)`
          : `unknown command "${name}"`;
    io.err(
      `cli: ${what}; the commands are ${commands.map((c) => c.name).join(', ')}.\nRun \`${CLI} --help\` for what each does.\n`,
    );
    return 2;
  }
  const parsed = parseCommandLine(command, rest);
  if (parsed.kind === 'help') {
    io.out(commandHelp(command));
    return 0;
  }
  if (parsed.kind === 'usage') {
    io.err(`${parsed.message}\n`);
    return 2;
  }
  const { ctx, close } = await io.open();
  try {
    return await command.run(parsed.args, ctx);
  } catch (e) {
    io.err(`cli ${command.name}: ${io.describe ? io.describe(e) : (e as Error).message}\n`);
    return 1;
  } finally {
    await close();
  }
}
