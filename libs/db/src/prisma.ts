import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { TrackedPool } from './tracked-pool';
import { Prisma, PrismaClient } from './generated/prisma/client';
import { FIXED_PLANS_OPTION, GENERIC_PLANS_OPTION, withSessionOption } from './session-option';
import { warmConnections, type WarmReport } from '@tickets/event-consumer/warm-connections';

export { Prisma, PrismaClient };

const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each distinct SQL text so that `pg` prepares it once per connection and PostgreSQL plans it
 * once, instead of parsing and planning the (large) create statement on every call: measured here,
 * that halves PostgreSQL's CPU per create (bench/create.bench.ts, docs/benchmarks.md). All our query
 * shapes are static; past MAX_NAMED_STATEMENTS distinct texts, new ones run unnamed.
 * Caveat: a migration that changes a table under a running process can fail one cached statement with
 * "cached plan must not change result type"; restart processes after migrating.
 */
function statementNames(): (query: { sql: string }) => string {
  const names = new Map<string, string>();
  return ({ sql }) => {
    let name = names.get(sql);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `q_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
      names.set(sql, name);
    }
    return name as string; // undefined: an unnamed (unprepared) statement
  };
}

export interface DatabaseClientOptions {
  /** Told of each idle connection the server closed (the API logs it). */
  onIdleError?: (err: Error) => void;
  /** Sessions start with FIXED_PLANS_OPTION (the hot paths: the API, the notifier). */
  fixedPlans?: boolean;
  /** Sessions start with GENERIC_PLANS_OPTION: for a pool whose every statement's generic plan reads by key (the notifier's dispatcher). */
  genericPlans?: boolean;
  /**
   * How many connections, once opened, the pool keeps however long they sit idle (pg-pool's `min`; the
   * pool still opens them only when a query needs one). Default: `poolMax`, so a pool never shrinks
   * back below what the load needed. A connection's first statements are its dearest: PostgreSQL loads
   * the catalog for the new backend and parses each named statement again, 5-9 ms for the create on a
   * quiet 2-core VM and 30-45 ms under load, and a pool that closed its idle connections paid that again
   * at every later burst, on the requests of the burst (docs/benchmarks.md, "Pools that keep their connections").
   */
  keepOpen?: number;
  /** How long a connection beyond `keepOpen` stays open idle (ms; default 30 s). */
  idleTimeoutMs?: number;
}

/** A Prisma client, and one-statement queries on the same pool without Prisma's query layer. */
export interface DatabaseClients {
  prisma: PrismaClient;
  /**
   * Runs ONE `Prisma.sql` statement (so its own implicit transaction) over `pg` directly, prepared once
   * per connection under the same name the client would give it. For the hot paths only (the create
   * and its replay): Prisma's `$queryRaw` costs several times the CPU of the `pg` call underneath it
   * (docs/benchmarks.md, "The API's CPU per create"). Rows come back as `pg` parses them (timestamptz:
   * Date, jsonb: parsed, int8: string); errors are `pg`'s, with the pool's phase stamps (databaseFailure).
   * `name`: for a statement whose text never changes (every value a parameter): its text is built once
   * and its prepared-statement name is `name`, saving the text's concatenation and hashing per call.
   */
  query<T>(sql: Prisma.Sql, name?: string): Promise<T[]>;
  /**
   * Opens `connections` connections at once and loads on each what the first run of `statements` would
   * (warmConnections: parsed and planned, not run). For a start, before the first requests arrive.
   */
  warm(statements: Prisma.Sql[], connections: number): Promise<WarmReport>;
  /** Disconnects Prisma and ends the pool (`prisma.$disconnect()` alone leaves it open when only `query` used it). */
  close(): Promise<void>;
}

/**
 * A Prisma client on a `pg` pool of `poolMax` connections (driver adapter, no native engine). The pool
 * is a TrackedPool, so errors of a lost session say whether the statement was sent (databaseFailure),
 * and an idle connection the server closes never crashes the process, whichever path used it first
 * (Prisma's adapter listens only once Prisma has connected; `query` can run before that).
 * `onIdleError`: told of each such closed idle connection (the API logs it).
 */
export function createDatabaseClients(
  url: string,
  poolMax: number,
  applicationName = 'tickets',
  options: DatabaseClientOptions = {},
): DatabaseClients {
  const { onIdleError, fixedPlans = false, genericPlans = false, keepOpen = poolMax, idleTimeoutMs = 30_000 } = options;
  const sessionOptions = [fixedPlans && FIXED_PLANS_OPTION, genericPlans && GENERIC_PLANS_OPTION]
    .filter(Boolean)
    .join(' ');
  const pool = new TrackedPool(
    {
      connectionString: sessionOptions ? withSessionOption(url, sessionOptions) : url,
      max: poolMax,
      application_name: applicationName,
      connectionTimeoutMillis: 5_000,
      min: keepOpen,
      idleTimeoutMillis: idleTimeoutMs,
    },
    onIdleError,
  );
  const names = statementNames();
  const adapter = new PrismaPg(pool, { statementNameGenerator: names, disposeExternalPool: true });
  const staticTexts = new Map<string, string>();
  const prisma = new PrismaClient({ adapter });
  return {
    prisma,
    query: async <T>(sql: Prisma.Sql, name?: string) => {
      let text = name === undefined ? undefined : staticTexts.get(name);
      if (text === undefined) {
        text = sql.text; // a getter that builds the string
        if (name !== undefined) staticTexts.set(name, text);
      }
      const res = await pool.query({ name: name ?? names({ sql: text }), text, values: sql.values });
      return res.rows as T[];
    },
    warm: (statements, connections) =>
      warmConnections(
        pool,
        statements.map((sql) => sql.text),
        connections,
      ),
    close: async () => {
      await prisma.$disconnect();
      if (!pool.ending) await pool.end();
    },
  };
}

export function createPrismaClient(
  url: string,
  poolMax: number,
  applicationName = 'tickets',
  options: DatabaseClientOptions = {},
): PrismaClient {
  return createDatabaseClients(url, poolMax, applicationName, options).prisma;
}
