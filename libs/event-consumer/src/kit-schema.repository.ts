import { Pool, type PoolClient } from 'pg';
import { BOOKKEEPING, KIT_MIGRATIONS, KIT_SCHEMA_VERSION, checksumOf, forSchema } from './kit.migrations';
import { KitTables } from './kit-schema';

export interface MigrateOptions {
  databaseUrl: string;
  /** Default `ticket_events`. */
  schema?: string;
}

export interface MigrateResult {
  schema: string;
  /** Steps applied by this call (empty: the schema was already at `version`). */
  applied: { version: number; name: string }[];
  version: number;
}

export class KitSchemaOutdated extends Error {
  override name = 'KitSchemaOutdated';
}

/** The advisory lock key of one schema's migrations: two replicas migrating one schema take turns. */
const lockKey = (schema: string) => `@tickets/event-consumer migrations ${schema}`;

/**
 * Creates or upgrades the kit's tables in `schema`: each step not yet recorded in kit_migrations is
 * applied in a transaction of its own, under a transaction-scoped advisory lock per schema, so two
 * processes migrating at once apply every step once (the second waits, then finds it recorded).
 * A recorded step whose checksum differs from this build's is refused: the schema was migrated by a
 * different kit. Idempotent: a second call applies nothing.
 */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const t = new KitTables(options.schema);
  const pool = new Pool({ connectionString: options.databaseUrl, max: 1, application_name: 'ticket-events-migrate' });
  pool.on('error', () => undefined);
  const applied: MigrateResult['applied'] = [];
  try {
    const client = await pool.connect();
    try {
      for (const step of KIT_MIGRATIONS) {
        if (await applyStep(client, t, step)) applied.push({ version: step.version, name: step.name });
      }
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
  return { schema: t.schema, applied, version: KIT_SCHEMA_VERSION };
}

async function applyStep(client: PoolClient, t: KitTables, step: (typeof KIT_MIGRATIONS)[number]): Promise<boolean> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lockKey(t.schema)]);
    await client.query(forSchema(BOOKKEEPING, t));
    const done = await client.query<{ checksum: string }>(`SELECT checksum FROM ${t.migrations} WHERE version = $1`, [
      step.version,
    ]);
    const sum = checksumOf(step);
    if (done.rows[0]) {
      await client.query('COMMIT');
      if (done.rows[0].checksum !== sum) {
        throw new KitSchemaOutdated(
          `schema ${t.schema}: step ${step.version} (${step.name}) was applied with another text (checksum ${done.rows[0].checksum.slice(0, 12)}, this kit has ${sum.slice(0, 12)}); ` +
            'the schema was migrated by a different build of @tickets/event-consumer: install the same version everywhere',
        );
      }
      return false;
    }
    await client.query(forSchema(step.sql, t));
    await client.query(`INSERT INTO ${t.migrations} (version, name, checksum) VALUES ($1, $2, $3)`, [
      step.version,
      step.name,
      sum,
    ]);
    await client.query('COMMIT');
    return true;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** The highest step recorded in the schema (0: not migrated at all). Own statement. */
export async function schemaVersion(db: Pool | PoolClient, t: KitTables): Promise<number> {
  try {
    const r = await db.query<{ v: number | null }>(`SELECT max(version)::int AS v FROM ${t.migrations}`);
    return r.rows[0]?.v ?? 0;
  } catch (err) {
    if ((err as { code?: string }).code === '42P01' || (err as { code?: string }).code === '3F000') return 0; // no table / no schema
    throw err;
  }
}

/** Throws what to run when the schema is older than this kit needs. */
export async function assertMigrated(db: Pool, t: KitTables): Promise<void> {
  const version = await schemaVersion(db, t);
  if (version >= KIT_SCHEMA_VERSION) return;
  throw new KitSchemaOutdated(
    version === 0
      ? `the kit's tables do not exist in schema ${t.schema} of this database: run \`npx ticket-events migrate --schema ${t.schema}\` (DATABASE_URL set), or pass the option migrate: true`
      : `the kit's tables in schema ${t.schema} are at version ${version}, this kit needs ${KIT_SCHEMA_VERSION}: run \`npx ticket-events migrate --schema ${t.schema}\`, or pass the option migrate: true`,
  );
}
