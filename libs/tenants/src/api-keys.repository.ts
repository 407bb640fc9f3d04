import { randomUUID } from 'node:crypto';
import type { ClientBase } from 'pg';
import { Prisma, type PrismaClient } from '@tickets/db';
import type { Actor, ApiKeyRow, NewKey } from './api-key.types';

type Tx = Prisma.TransactionClient;

export interface TenantRef {
  tenantId: string;
  tenantSlug: string;
}

/** A key that works now: its tenant, its id and when it stops working (null: never). */
export interface ActiveKey extends TenantRef {
  keyId: string;
  expiresAt: Date | null;
}

/** The channel the api_keys trigger notifies on a revoke, a new expiry or a deleted key. */
export const API_KEYS_CHANGED_CHANNEL = 'api_keys_changed';

const ROW = Prisma.sql`k.id::text AS id, k.tenant_id::text AS "tenantId", t.slug AS "tenantSlug", k.prefix, k.label,
  k.created_at AS "createdAt", k.last_used_at AS "lastUsedAt", k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt"`;

/** A key that works now: not revoked, not expired. */
const WORKS_NOW = Prisma.sql`k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The tenants, api_keys and api_key_actions tables. Every write that changes a key also writes its
 * api_key_actions row, in one transaction, so no action is unaudited.
 */
export class ApiKeysRepository {
  constructor(private readonly prisma: PrismaClient) {}

  private transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(work, { maxWait: 5_000, timeout: 15_000 });
  }

  private async insertKey(tx: Tx, tenantId: string, key: NewKey): Promise<string> {
    const id = randomUUID();
    await tx.$executeRaw(Prisma.sql`
      INSERT INTO api_keys (id, tenant_id, key_hash, prefix, label, expires_at)
      VALUES (${id}::uuid, ${tenantId}::uuid, ${key.keyHash}, ${key.prefix}, ${key.label}, ${key.expiresAt})`);
    return id;
  }

  private async audit(tx: Tx, keyId: string, tenantId: string, action: string, actor: Actor, detail: object) {
    await tx.$executeRaw(Prisma.sql`
      INSERT INTO api_key_actions (key_id, tenant_id, action, actor, note, detail)
      VALUES (${keyId}::uuid, ${tenantId}::uuid, ${action}, ${actor.by}, ${actor.note}, ${JSON.stringify(detail)}::jsonb)`);
  }

  /**
   * Own transaction: creates the tenant if it is new and the key (only its hash is stored), audited.
   * With `replace`, the tenant's other unrevoked keys with the same label are revoked in the same
   * transaction (each audited), for a script that makes a fresh key on every run.
   */
  async createKey(
    tenantSlug: string,
    key: NewKey,
    actor: Actor,
    replace = false,
  ): Promise<TenantRef & { keyId: string; revoked: ApiKeyRow[] }> {
    return this.transaction(async (tx) => {
      const [tenant] = await tx.$queryRaw<Array<{ id: string }>>(Prisma.sql`
        INSERT INTO tenants (id, slug) VALUES (${randomUUID()}::uuid, ${tenantSlug})
        ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id::text AS id`);
      const keyId = await this.insertKey(tx, tenant.id, key);
      await this.audit(tx, keyId, tenant.id, 'create', actor, {
        prefix: key.prefix,
        label: key.label,
        expiresAt: key.expiresAt,
      });
      let revoked: ApiKeyRow[] = [];
      if (replace) {
        revoked = await tx.$queryRaw<ApiKeyRow[]>(Prisma.sql`
          WITH r AS (
            UPDATE api_keys SET revoked_at = now()
             WHERE tenant_id = ${tenant.id}::uuid AND label IS NOT DISTINCT FROM ${key.label}
               AND id <> ${keyId}::uuid AND revoked_at IS NULL
            RETURNING *
          ) SELECT ${ROW} FROM r k JOIN tenants t ON t.id = k.tenant_id ORDER BY k.created_at`);
        for (const r of revoked)
          await this.audit(tx, r.id, tenant.id, 'revoke', actor, { replacedBy: keyId, replacedByPrefix: key.prefix });
      }
      return { tenantId: tenant.id, tenantSlug, keyId, revoked };
    });
  }

  /** Runs alone: the key with this hash if it works now (not revoked, not expired by the database's clock). */
  async findActiveByHash(keyHash: string): Promise<ActiveKey | null> {
    const rows = await this.prisma.$queryRaw<ActiveKey[]>(Prisma.sql`
      SELECT k.id::text AS "keyId", k.expires_at AS "expiresAt", t.id::text AS "tenantId", t.slug AS "tenantSlug"
        FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
       WHERE k.key_hash = ${keyHash} AND ${WORKS_NOW}`);
    return rows[0] ?? null;
  }

  /**
   * Runs alone: sets last_used_at unless it was set less than `minIntervalMs` ago (by any process), so
   * several API processes write it at most about once per interval between them.
   */
  async touch(keyId: string, minIntervalMs: number): Promise<void> {
    await this.prisma.$executeRaw(Prisma.sql`
      UPDATE api_keys SET last_used_at = now()
       WHERE id = ${keyId}::uuid
         AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => ${minIntervalMs / 1000}::float8))`);
  }

  /** Runs alone: the keys, by tenant then newest first; without `all`, only those that work now. */
  async list(filter: { tenantSlug?: string; all: boolean; limit: number }): Promise<ApiKeyRow[]> {
    return this.prisma.$queryRaw<ApiKeyRow[]>(Prisma.sql`
      SELECT ${ROW} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
       WHERE (${filter.tenantSlug ?? null}::text IS NULL OR t.slug = ${filter.tenantSlug ?? null})
         AND (${filter.all}::boolean OR (${WORKS_NOW}))
       ORDER BY t.slug, k.created_at DESC, k.id
       LIMIT ${filter.limit}`);
  }

  /**
   * Runs alone: the keys `ref` names: its id, its listed prefix, or (pasted by an operator who holds
   * it) the whole key, matched by hash. Several rows when a prefix is shared.
   */
  async findByRef(ref: string, keyHash: string): Promise<ApiKeyRow[]> {
    return this.prisma.$queryRaw<ApiKeyRow[]>(Prisma.sql`
      SELECT ${ROW} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
       WHERE ${UUID.test(ref) ? Prisma.sql`k.id = ${ref}::uuid OR` : Prisma.empty} k.prefix = ${ref} OR k.key_hash = ${keyHash}
       ORDER BY k.created_at`);
  }

  /** Own transaction: revokes the key and audits it; null when it was already revoked (nothing written). */
  async revoke(keyId: string, actor: Actor): Promise<ApiKeyRow | null> {
    return this.transaction(async (tx) => {
      const [row] = await tx.$queryRaw<ApiKeyRow[]>(Prisma.sql`
        WITH r AS (UPDATE api_keys SET revoked_at = now() WHERE id = ${keyId}::uuid AND revoked_at IS NULL RETURNING *)
        SELECT ${ROW} FROM r k JOIN tenants t ON t.id = k.tenant_id`);
      if (row) await this.audit(tx, row.id, row.tenantId, 'revoke', actor, { prefix: row.prefix });
      return row ?? null;
    });
  }

  /**
   * Own transaction: a new key for the tenant of `oldKeyId` (same label), and the old key expires at
   * `cutover` (or earlier, if it already did), both audited. The old row is locked first, so two
   * rotations of one key run one after the other. Null when the old key no longer works (revoked or
   * expired): nothing is written.
   */
  async rotate(
    oldKeyId: string,
    next: Omit<NewKey, 'label'>,
    cutover: Date,
    actor: Actor,
  ): Promise<{ old: ApiKeyRow; newKeyId: string } | null> {
    return this.transaction(async (tx) => {
      const [old] = await tx.$queryRaw<ApiKeyRow[]>(Prisma.sql`
        SELECT ${ROW} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
         WHERE k.id = ${oldKeyId}::uuid AND ${WORKS_NOW}
           FOR UPDATE OF k`);
      if (!old) return null;
      const newKeyId = await this.insertKey(tx, old.tenantId, { ...next, label: old.label });
      const [updated] = await tx.$queryRaw<ApiKeyRow[]>(Prisma.sql`
        WITH u AS (
          UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, ${cutover}), ${cutover})
           WHERE id = ${oldKeyId}::uuid RETURNING *
        ) SELECT ${ROW} FROM u k JOIN tenants t ON t.id = k.tenant_id`);
      const detail = { newKeyId, newPrefix: next.prefix, oldKeyId, oldPrefix: old.prefix, cutover: updated.expiresAt };
      await this.audit(tx, oldKeyId, old.tenantId, 'rotate', actor, detail);
      await this.audit(tx, newKeyId, old.tenantId, 'create', actor, {
        ...detail,
        label: old.label,
        expiresAt: next.expiresAt,
      });
      return { old: updated, newKeyId };
    });
  }

  /** On the caller's dedicated connection (Prisma cannot LISTEN): the api_keys change notifications. */
  static async listen(client: ClientBase): Promise<void> {
    await client.query(`LISTEN ${API_KEYS_CHANGED_CHANNEL}`);
  }
}
