import { Prisma, type PrismaClient } from '@tickets/db';

/** A stored idempotency record, as the keyed commands need it. */
export interface StoredKey {
  operation: string;
  fingerprint: string;
  requestBody: Record<string, unknown>;
  responseStatus: number;
  responseBody: string | null;
  outcome: string;
  ticketId: string;
  createdAt: Date;
  replayUntil: Date;
  expiresAt: Date;
}

export interface NewKey extends Omit<StoredKey, 'responseBody'> {
  tenantId: string;
  key: string;
  responseBody: string;
}

export interface PurgeReport {
  responsesCleared: number;
  keysDeleted: number;
}

/** What the key guard saw: whether the key's in-flight lock was taken, and an earlier use of the key. */
export interface KeyGuard {
  gotLock: boolean;
  prior: StoredKey | null;
}

/** What the key guard of a composed statement returns: see `keyGuardColumns`. */
export type KeyGuardRow = { key_locked: boolean; has_prior: boolean } & Partial<StoredKey>;

type Tx = Prisma.TransactionClient;

/** The lock that marks a key "in flight": a transaction-scoped advisory lock on hash(tenant, key). */
const keyLock = (tenantId: string, key: string) => Prisma.sql`hashtextextended(${tenantId} || ':' || ${key}, 0)`;

const STORED_KEY_COLUMNS = Prisma.sql`operation, fingerprint, request_body AS "requestBody", response_status AS "responseStatus",
  response_body AS "responseBody", outcome, ticket_id AS "ticketId", created_at AS "createdAt",
  replay_until AS "replayUntil", expires_at AS "expiresAt"`;

const KEY_INSERT_COLUMNS = Prisma.sql`(tenant_id, key, operation, fingerprint, request_body, response_status, response_body,
  outcome, ticket_id, created_at, replay_until, expires_at)`;

// The guard's fixed fragments, built once: the create path composes them into every statement.
const KEY_GUARD_CLEAR = Prisma.sql`(SELECT got FROM key_lock) AND NOT EXISTS (SELECT 1 FROM prior_key)`;
const KEY_GUARD_COLUMNS = Prisma.sql`(SELECT got FROM key_lock) AS key_locked, (prior_key.operation IS NOT NULL) AS has_prior, prior_key.*`;
const KEY_GUARD_JOIN = Prisma.sql`LEFT JOIN prior_key ON true`;

/** The values of one key row; `ticketId` is SQL so a composed statement can take it from its own insert. */
const keyValues = (
  key: NewKey,
  ticketId: Prisma.Sql,
) => Prisma.sql`${key.tenantId}::uuid, ${key.key}, ${key.operation}, ${key.fingerprint},
  ${JSON.stringify(key.requestBody)}::jsonb, ${key.responseStatus}::int, ${key.responseBody}, ${key.outcome}, ${ticketId},
  ${key.createdAt.toISOString()}::timestamptz, ${key.replayUntil.toISOString()}::timestamptz, ${key.expiresAt.toISOString()}::timestamptz`;

/**
 * The idempotency_keys table: reads, the in-flight lock, inserts, the retention purge, and the SQL
 * fragments a one-statement command composes into its own statement.
 */
export class IdempotencyKeysRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Fragment: CTEs `key_lock` (takes the key's advisory lock without waiting) and `prior_key` (an earlier
   * use of the key), for the WITH clause of a one-statement command. Runs in that statement's transaction.
   */
  static keyGuardCtes(tenantId: string, key: string): Prisma.Sql {
    return Prisma.sql`
      key_lock AS MATERIALIZED (
        SELECT pg_try_advisory_xact_lock(${keyLock(tenantId, key)}) AS got
      ),
      prior_key AS MATERIALIZED (
        SELECT ${STORED_KEY_COLUMNS} FROM idempotency_keys WHERE tenant_id = ${tenantId}::uuid AND key = ${key}
      )`;
  }

  /** Fragment: true when the guard allows the command's writes (lock taken, key unused). */
  static keyGuardClear(): Prisma.Sql {
    return KEY_GUARD_CLEAR;
  }

  /** Fragment: a CTE `name` inserting the key row once per row of `source`, whose `ticketColumn` is the ticket id. */
  static insertKeyCte(name: string, key: NewKey, source: string, ticketColumn: string): Prisma.Sql {
    const ticketId = Prisma.raw(`${source}.${ticketColumn}`);
    return Prisma.sql`
      ${Prisma.raw(name)} AS (
        INSERT INTO idempotency_keys ${KEY_INSERT_COLUMNS}
        SELECT ${keyValues(key, ticketId)} FROM ${Prisma.raw(source)}
        RETURNING 1
      )`;
  }

  /** Fragment: the guard's result columns (`KeyGuardRow`); the FROM clause must end with `keyGuardJoin()`. */
  static keyGuardColumns(): Prisma.Sql {
    return KEY_GUARD_COLUMNS;
  }

  static keyGuardJoin(): Prisma.Sql {
    return KEY_GUARD_JOIN;
  }

  /** Reads what the guard found out of a composed statement's result row. */
  static readKeyGuard(r: KeyGuardRow): KeyGuard {
    return { gotLock: r.key_locked, prior: r.has_prior ? toStoredKey(r as StoredKey) : null };
  }

  /** Runs alone or inside the caller's transaction (`tx`). */
  async findKey(tenantId: string, key: string, tx: Tx | PrismaClient = this.prisma): Promise<StoredKey | null> {
    const rows = await tx.$queryRaw<StoredKey[]>(Prisma.sql`
      SELECT ${STORED_KEY_COLUMNS} FROM idempotency_keys WHERE tenant_id = ${tenantId}::uuid AND key = ${key}`);
    return rows[0] ? toStoredKey(rows[0]) : null;
  }

  /**
   * Runs alone, in its own transaction: waits (at most `lockTimeoutMs`) for the key's in-flight lock, so
   * that no transaction writing this key is still running, then reads the key. Throws SQLSTATE 55P03
   * when the lock was not granted in time (a write with this key is still running).
   */
  async findKeyOnceSettled(tenantId: string, key: string, lockTimeoutMs: number): Promise<StoredKey | null> {
    const ms = Math.max(1, Math.ceil(lockTimeoutMs));
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw(Prisma.sql`SELECT set_config('lock_timeout', ${`${ms}ms`}, true)`);
      await tx.$executeRaw(Prisma.sql`SELECT pg_advisory_xact_lock(${keyLock(tenantId, key)})`);
      return this.findKey(tenantId, key, tx);
    });
  }

  /**
   * Runs alone, one statement: the key's row or, only when there is none, whether some transaction holds
   * the key's lock (the first request with this key is in flight; pg_locks is read only then). The row
   * comes from the statement's snapshot and the locks are read after it: a request that commits in
   * between shows as neither, so read the key again when both are empty.
   */
  async findKeyOrInFlight(tenantId: string, key: string): Promise<{ stored: StoredKey | null; inFlight: boolean }> {
    const rows = await this.prisma.$queryRaw<Array<StoredKey & { found: boolean; busy: boolean }>>(Prisma.sql`
      WITH k AS (SELECT ${STORED_KEY_COLUMNS} FROM idempotency_keys WHERE tenant_id = ${tenantId}::uuid AND key = ${key}),
           wanted AS (SELECT ${keyLock(tenantId, key)} AS hash)
      SELECT k.*, k."createdAt" IS NOT NULL AS found,
        CASE WHEN k."createdAt" IS NOT NULL THEN false ELSE EXISTS (
          SELECT 1 FROM pg_locks held, wanted
          WHERE held.locktype = 'advisory' AND held.objsubid = 1 AND held.granted
            AND held.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND held.classid::bigint = ((wanted.hash >> 32) & 4294967295)
            AND held.objid::bigint = (wanted.hash & 4294967295)
        ) END AS busy
      FROM (VALUES (1)) one LEFT JOIN k ON true`);
    const r = rows[0];
    return { stored: r?.found ? toStoredKey(r) : null, inFlight: r?.busy ?? false };
  }

  /**
   * Runs alone: how many keys are in flight in this database now (their in-flight lock is granted).
   * Counts the advisory locks on one bigint, as the key locks are, except `otherLockKeys` (the
   * relay's leader lock, a bigint lock too). Reads pg_locks only: no table, no row lock.
   */
  async countKeysInFlight(otherLockKeys: string[]): Promise<number> {
    const rows = await this.prisma.$queryRaw<Array<{ n: bigint }>>(Prisma.sql`
      SELECT count(*) AS n FROM pg_locks held
      WHERE held.locktype = 'advisory' AND held.objsubid = 1 AND held.granted
        AND held.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND ((held.classid::bigint << 32) | held.objid::bigint) <> ALL (${otherLockKeys}::bigint[])`);
    return Number(rows[0]?.n ?? 0);
  }

  /** Must run inside the caller's transaction: takes the key's in-flight lock without waiting. */
  async tryLockKey(tx: Tx, tenantId: string, key: string): Promise<boolean> {
    const rows = await tx.$queryRaw<Array<{ got: boolean }>>(
      Prisma.sql`SELECT pg_try_advisory_xact_lock(${keyLock(tenantId, key)}) AS got`,
    );
    return rows[0].got;
  }

  /** Runs alone: records a key unless it exists. false: the key was taken meanwhile. */
  async insertKeyIfAbsent(key: NewKey): Promise<boolean> {
    const n = await this.prisma.$executeRaw(Prisma.sql`
      INSERT INTO idempotency_keys ${KEY_INSERT_COLUMNS}
      VALUES (${keyValues(key, Prisma.sql`${key.ticketId}::uuid`)})
      ON CONFLICT (tenant_id, key) DO NOTHING`);
    return n === 1;
  }

  /** Must run inside the caller's transaction, which holds the key's lock: a duplicate is an error. */
  async insertKey(tx: Tx, key: NewKey): Promise<void> {
    await tx.$executeRaw(Prisma.sql`
      INSERT INTO idempotency_keys ${KEY_INSERT_COLUMNS}
      VALUES (${keyValues(key, Prisma.sql`${key.ticketId}::uuid`)})`);
  }

  /**
   * Runs alone, in batches of short transactions. Applies the two retention windows: stored responses are
   * dropped once past replay_until (the key row stays, so the key still resolves to its ticket and a reuse
   * still gets 410/422), and whole rows are deleted once past expires_at. Nothing inside a live window is touched.
   */
  async purge(
    opts: { batchSize?: number; onProgress?: (r: PurgeReport) => void; now?: Date } = {},
  ): Promise<PurgeReport> {
    const batch = opts.batchSize ?? 1_000;
    const now = opts.now ?? new Date();
    const report: PurgeReport = { responsesCleared: 0, keysDeleted: 0 };
    for (;;) {
      const n = await this.prisma.$executeRaw(Prisma.sql`
        DELETE FROM idempotency_keys WHERE ctid IN (
          SELECT ctid FROM idempotency_keys WHERE expires_at <= ${now}::timestamptz LIMIT ${batch}::int)`);
      report.keysDeleted += n;
      opts.onProgress?.(report);
      if (n < batch) break;
    }
    for (;;) {
      const n = await this.prisma.$executeRaw(Prisma.sql`
        UPDATE idempotency_keys SET response_body = NULL WHERE ctid IN (
          SELECT ctid FROM idempotency_keys WHERE replay_until <= ${now}::timestamptz AND response_body IS NOT NULL LIMIT ${batch}::int)`);
      report.responsesCleared += n;
      opts.onProgress?.(report);
      if (n < batch) break;
    }
    return report;
  }
}

function toStoredKey(r: StoredKey): StoredKey {
  return {
    operation: r.operation,
    fingerprint: r.fingerprint,
    requestBody: (r.requestBody ?? {}) as Record<string, unknown>,
    responseStatus: Number(r.responseStatus),
    responseBody: r.responseBody ?? null,
    outcome: r.outcome,
    ticketId: r.ticketId,
    createdAt: new Date(r.createdAt),
    replayUntil: new Date(r.replayUntil),
    expiresAt: new Date(r.expiresAt),
  };
}
