import { createHash } from 'node:crypto';

/** The schema of the kit's tables when the options name none. */
export const DEFAULT_SCHEMA = 'ticket_events';

/** A PostgreSQL identifier the kit accepts as a schema name: lower case, unquoted-safe, at most 63 bytes. */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

export class KitSchemaError extends Error {
  override name = 'KitSchemaError';
}

/**
 * The kit's table names in one schema, quoted. The schema name is validated here, once: it is the only
 * text the kit puts into a statement that is not a parameter (an identifier cannot be one).
 */
export class KitTables {
  readonly schema: string;
  readonly inbox: string;
  readonly deadLetters: string;
  readonly actions: string;
  readonly replays: string;
  readonly replayPartitions: string;
  readonly pauses: string;
  readonly migrations: string;
  /**
   * The NOTIFY channel of this schema's pause requests, bare (for pg_notify) and quoted (for LISTEN):
   * one per schema, so that two kit schemas in one database do not wake each other's members.
   */
  readonly pauseChannel: string;
  readonly quotedPauseChannel: string;

  constructor(schema: string = DEFAULT_SCHEMA) {
    if (!IDENTIFIER.test(schema)) {
      throw new KitSchemaError(
        `schema "${schema}" is not a valid schema name for the kit: use lower-case letters, digits and _ (at most 63, not starting with a digit), e.g. ${DEFAULT_SCHEMA}`,
      );
    }
    this.schema = schema;
    const q = (table: string) => `"${schema}"."${table}"`;
    this.inbox = q('inbox_events');
    this.deadLetters = q('consumer_dead_letters');
    this.actions = q('dead_letter_actions');
    this.replays = q('replays');
    this.replayPartitions = q('replay_partitions');
    this.pauses = q('replay_pauses');
    this.migrations = q('kit_migrations');
    this.pauseChannel = pauseChannelOf(schema);
    this.quotedPauseChannel = `"${this.pauseChannel}"`;
  }

  /** The quoted schema name alone. */
  get quotedSchema(): string {
    return `"${this.schema}"`;
  }
}

/**
 * `<schema>_pause` (ticket_events_pause by default); a schema name too long for that (a channel is an
 * identifier: at most 63 bytes) keeps its first 40 characters and gets a hash of the whole name, so the
 * channel stays one per schema. Only [a-z0-9_], like the schema name.
 */
function pauseChannelOf(schema: string): string {
  const plain = `${schema}_pause`;
  if (plain.length <= 63) return plain;
  return `${schema.slice(0, 40)}_pause_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}
