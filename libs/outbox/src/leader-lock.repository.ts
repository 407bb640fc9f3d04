import type { ClientBase } from 'pg';

/**
 * The relay's leadership SQL, on its dedicated lock connection (raw `pg`: Prisma cannot hold a
 * session or LISTEN). Each method is one statement; none runs inside a transaction.
 */
export class LeaderLockRepository {
  /**
   * Session settings of the lock connection. Keepalives: a silently dead peer must not keep the lock
   * for the kernel's default 2 h. synchronous_commit off: this session only writes published marks,
   * parks and dead-letter moves. A commit lost to a PostgreSQL crash just undoes one of those, so the
   * row is published again (a duplicate, which at-least-once allows) or re-examined; no row can be
   * lost. It saves a WAL flush per batch.
   */
  async configureSession(db: ClientBase): Promise<void> {
    await db.query(
      'SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3; SET synchronous_commit = off',
    );
  }

  /** pg_try_advisory_lock: the session keeps the lock until it ends (or unlocks). */
  async tryLock(db: ClientBase, key: string): Promise<boolean> {
    const { rows } = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [key]);
    return rows[0].locked;
  }

  /** `channel` is a constant identifier (LISTEN takes no parameters). */
  async listen(db: ClientBase, channel: string): Promise<void> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    await db.query(`LISTEN ${channel}`);
  }
}
