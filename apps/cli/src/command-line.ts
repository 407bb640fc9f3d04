import { parseArgs } from 'node:util';
import type { AppConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';

export interface CliContext {
  prisma: PrismaClient;
  config: AppConfig;
  /** One line of the command's result, on stdout. */
  out(line: string): void;
  /** Progress and diagnostics, on stderr, written as given (no newline added). */
  err(text: string): void;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The value's placeholder in the help, e.g. `<slug>`. */
  value?: string;
  description: string;
  /** What applies when the option is absent, as the help shows it; absent for a required option. */
  default?: string;
  required?: boolean;
}

export type Values = Record<string, string | boolean | undefined>;

/** A usage problem: what is wrong and what to do instead. */
export class UsageProblem {
  constructor(readonly problem: string) {}
}

export interface CliCommand<A = unknown> {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Forms of the command, each after `npm run cli -- `. */
  usage: string[];
  /** Paragraphs of the help between the usage and the options. */
  details?: string[];
  /** The words the command takes before its options (e.g. its action); none when absent. */
  positionals?: Array<{ name: string; description: string }>;
  options: Record<string, OptionSpec>;
  /** The parsed arguments, checked; a UsageProblem when they do not make a valid call. */
  validate(values: Values, positionals: string[]): A | UsageProblem;
  /** Runs the command; resolves to the exit code. */
  run(args: A, ctx: CliContext): Promise<number>;
}

export type ParsedCommandLine<A> = { kind: 'help' } | { kind: 'args'; args: A } | { kind: 'usage'; message: string };

export const CLI = 'npm run cli --';

/** The usage message for a wrong call: the problem, then where the help is. */
export function usageMessage(command: string, problem: string): string {
  return `cli ${command}: ${problem}\nRun \`${CLI} ${command} --help\` for its usage and options.`;
}

function nodeParseProblem(e: unknown, argv: string[], options: Record<string, OptionSpec>): string | undefined {
  const code = (e as { code?: string }).code;
  const quoted = /'(-{1,2}[^' ]+)/.exec((e as Error).message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = quoted ?? argv.find((a) => a.startsWith('-') && !(a.replace(/^--?/, '').split('=')[0] in options));
    return `unknown option ${flag ?? ''}`.trim();
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && quoted) {
    const spec = options[quoted.replace(/^--?/, '')];
    if (spec?.type === 'boolean') return `${quoted} takes no value`;
    return `${quoted} needs a value: ${quoted} ${spec?.value ?? '<value>'}`;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const word = /'([^']*)'/.exec((e as Error).message)?.[1];
    return `unexpected argument${word ? ` "${word}"` : ''}: this command takes only options`;
  }
  return undefined;
}

/**
 * Parses a command's arguments with node:util parseArgs, strictly: an unknown option, a missing value
 * or a stray word is a usage message naming it. `--help`/`-h` anywhere asks for the help.
 */
export function parseCommandLine<A>(command: CliCommand<A>, argv: string[]): ParsedCommandLine<A> {
  const end = argv.indexOf('--');
  if ((end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h')) return { kind: 'help' };
  let parsed: { values: Values; positionals: string[] };
  try {
    const options = Object.fromEntries(Object.entries(command.options).map(([name, o]) => [name, { type: o.type }]));
    parsed = parseArgs({
      args: argv,
      options,
      strict: true,
      allowPositionals: Boolean(command.positionals?.length),
    }) as typeof parsed;
  } catch (e) {
    const problem = nodeParseProblem(e, argv, command.options);
    if (problem === undefined) throw e;
    return { kind: 'usage', message: usageMessage(command.name, problem) };
  }
  const args = command.validate(parsed.values, parsed.positionals);
  return args instanceof UsageProblem
    ? { kind: 'usage', message: usageMessage(command.name, args.problem) }
    : { kind: 'args', args };
}

function table(rows: Array<[string, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

/** The `--help` text of a command: usage, what it does, each option's meaning and default. */
export function commandHelp(command: CliCommand<unknown>): string {
  const options: Array<[string, string]> = Object.entries(command.options).map(([name, o]) => [
    `--${name}${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}`,
    `${o.description} (${o.required ? 'required' : `default: ${o.default ?? 'none'}`})`,
  ]);
  options.push(['-h, --help', 'show this help and exit']);
  return [
    ...command.usage.map((u, i) => `${i === 0 ? 'usage: ' : '       '}${CLI} ${u}`),
    '',
    command.summary,
    ...(command.details?.length ? ['', ...command.details] : []),
    ...(command.positionals?.length
      ? ['', 'arguments:', ...table(command.positionals.map((p) => [p.name, p.description]))]
      : []),
    '',
    'options:',
    ...table(options),
  ].join('\n');
}

/** The CLI's own `--help`: the commands and where their help is. */
export function cliHelp(commands: Array<CliCommand<unknown>>): string {
  return [
    `usage: ${CLI} <command> [options]`,
    '',
    'commands:',
    ...table(commands.map((c) => [c.name, c.summary])),
    '',
    `Run \`${CLI} <command> --help\` for a command's usage, options and defaults.`,
    'Exit codes: 0 done, 1 failed (or reconcile found disagreements), 2 wrong usage; replay adds 3 (group busy) and 4 (timed out).',
  ].join('\n');
}
