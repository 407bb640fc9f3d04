import { parseArgs, type ParseArgsConfig } from 'node:util';
import { databaseHost, sslRefusedAdvice } from '../database-errors';
import { DURATION_UNITS } from '../durations';
import { DEFAULT_SCHEMA, KitSchemaError, KitTables } from '../kit-schema';
import { binEnvironment, brokersOf, pgSslMode } from '../ticket-events.env';
import { databaseUrlProblem } from '../ticket-events.options';
import { shellQuoted } from '../shell-quoted';

export const BIN = 'ticket-events';

/** Exit codes of every command: 0 done, 1 failed or refused, 2 wrong usage, 3 the group is busy (live members with --no-pause, or paused by another replay), 4 timed out. */
export const EXIT = { ok: 0, failed: 1, usage: 2, groupBusy: 3, timeout: 4 } as const;

export class Usage extends Error {
  override name = 'Usage';
}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** Where every command acts: flags win over the environment. */
export const COMMON: Options = {
  'database-url': { type: 'string' },
  brokers: { type: 'string' },
  topic: { type: 'string' },
  schema: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export type Place = 'database-url' | 'brokers' | 'topic' | 'schema';

const COMMON_HELP: Record<Place | 'help', string> = {
  'database-url': "  --database-url <url>   the consumer's PostgreSQL (default: DATABASE_URL)",
  brokers: '  --brokers <a:9092,..>  Kafka bootstrap brokers (default: KAFKA_BROKERS)',
  topic: '  --topic <topic>        the events topic (default: TICKET_EVENTS_TOPIC, else ticket-events)',
  schema: "  --schema <name>        schema of the kit's tables (default: EVENT_CONSUMER_SCHEMA, else ticket_events)",
  help: '  -h, --help             this help',
};

export interface Command {
  name: string;
  summary: string;
  help: string[];
  options: Options;
  /** The places it acts on, listed in its help; default all four. */
  places?: Place[];
  run(values: Values, positionals: string[], io: Io): Promise<number>;
}

export function parse(command: Command, argv: string[]): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...COMMON, ...command.options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Values, positionals };
  } catch (e) {
    // Node's text in full: its later lines say how to pass a value that starts with a dash (--partition=-1).
    throw new Usage(`${sentence((e as Error).message.split('\n').join(' '))} Run \`${BIN} ${command.name} --help\`.`);
  }
}

/** `s` as a sentence: a full stop added unless it ends with one, or with ? or !. */
export function sentence(s: string): string {
  return /[.?!]$/.test(s) ? s : `${s}.`;
}

export function commandHelp(c: Command): string {
  const places = c.places ?? (['database-url', 'brokers', 'topic', 'schema'] as const);
  return [
    ...c.help,
    '',
    'Where (flags win over the environment):',
    ...places.map((p) => COMMON_HELP[p]),
    COMMON_HELP.help,
  ].join('\n');
}

export interface Target {
  databaseUrl: string;
  brokers: string[];
  topic: string;
  schema?: string;
}

/** The database, brokers and topic: flags, else the environment. Says which is missing and how to give it. */
export function target(values: Values, need: { database?: boolean; brokers?: boolean }): Target {
  const env = binEnvironment();
  const databaseUrl = (values['database-url'] as string | undefined) ?? env.databaseUrl;
  const brokersText = values.brokers as string | undefined;
  const brokers = brokersText ? brokersOf(brokersText) : env.brokers;
  if (need.database && !databaseUrl)
    throw new Usage('no database: pass --database-url postgresql://user@host:5432/db or set DATABASE_URL');
  const urlProblem = need.database && databaseUrl ? databaseUrlProblem(databaseUrl) : undefined;
  if (urlProblem) throw new Usage(`--database-url / DATABASE_URL ${urlProblem}`);
  if (need.brokers && !brokers?.length)
    throw new Usage('no Kafka brokers: pass --brokers host:9092 or set KAFKA_BROKERS');
  const schema = (values.schema as string | undefined) ?? env.schema;
  try {
    new KitTables(schema);
  } catch (e) {
    if (e instanceof KitSchemaError) throw new Usage(`--schema / EVENT_CONSUMER_SCHEMA: ${e.message}`);
    throw e;
  }
  return {
    databaseUrl: databaseUrl ?? '',
    brokers: brokers ?? [],
    topic: (values.topic as string | undefined) ?? env.topic,
    schema,
  };
}

export function duration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new Usage(`${flag} "${text}" is not a duration (30s, 10m, 24h, 7d)`);
  return Math.round(Number(m[1]) * DURATION_UNITS[m[2]]);
}

/** An ISO-8601 time, or a duration back from now (24h). */
export function timeBound(text: string, flag: string): Date {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw new Usage(`${flag} "${text}" is not a valid ISO-8601 time`);
    return new Date(at);
  }
  return new Date(Date.now() - duration(text, flag));
}

/** What an error from the database or the broker means for the operator, in one line. */
export function explain(err: unknown, t?: Partial<Target>): string {
  const e = err as { code?: string; name?: string; message?: string };
  const msg = e?.message ?? String(err);
  const host = t?.databaseUrl ? databaseHost(t.databaseUrl) : 'the database';
  const ssl = t?.databaseUrl
    ? sslRefusedAdvice(err, t.databaseUrl, '--database-url / DATABASE_URL', pgSslMode())
    : undefined;
  if (ssl) return `cannot use ${ssl}`;
  if (
    e?.code === 'ECONNREFUSED' ||
    e?.code === 'ENOTFOUND' ||
    e?.code === '3D000' ||
    e?.code === '28P01' ||
    e?.code === '28000'
  ) {
    return `cannot use PostgreSQL at ${host} (${e.code}: ${msg}): check --database-url / DATABASE_URL and that the server is up`;
  }
  if (/^KafkaJS/.test(e?.name ?? ''))
    return `Kafka at ${t?.brokers?.join(',') ?? '?'} failed (${e.name}: ${msg}): check --brokers / KAFKA_BROKERS and that the broker is up`;
  if (e?.code === '42P01' || e?.code === '3F000') {
    const schema = t?.schema ?? DEFAULT_SCHEMA;
    return `${msg}: the kit's tables are not in schema ${schema} of ${host}. Check --schema / EVENT_CONSUMER_SCHEMA and --database-url / DATABASE_URL; if they are right, create the tables with \`${BIN} migrate --schema ${shellQuoted(schema)}\``;
  }
  if (e?.code === '42501') {
    return (
      `${msg} (42501, at ${host}): the role in --database-url / DATABASE_URL lacks a privilege. \`${BIN} migrate\` needs ` +
      `CREATE on the database (or run it as the owner of the kit's schema); the other commands need USAGE on that ` +
      `schema and SELECT, INSERT, UPDATE, DELETE on its tables`
    );
  }
  return msg;
}
