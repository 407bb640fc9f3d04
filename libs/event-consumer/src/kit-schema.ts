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
  readonly migrations: string;

  constructor(schema: string = DEFAULT_SCHEMA) {
    if (!IDENTIFIER.test(schema)) {
      throw new KitSchemaError(`schema "${schema}" is not a valid schema name for the kit: use lower-case letters, digits and _ (at most 63, not starting with a digit), e.g. ${DEFAULT_SCHEMA}`);
    }
    this.schema = schema;
    const q = (table: string) => `"${schema}"."${table}"`;
    this.inbox = q('inbox_events');
    this.deadLetters = q('consumer_dead_letters');
    this.actions = q('dead_letter_actions');
    this.replays = q('replays');
    this.replayPartitions = q('replay_partitions');
    this.migrations = q('kit_migrations');
  }

  /** The quoted schema name alone. */
  get quotedSchema(): string {
    return `"${this.schema}"`;
  }
}
