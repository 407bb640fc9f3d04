import type { ClientBase } from 'pg';
import { RELAY_SESSION_SQL } from './outbox.repository';

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
   * lost. It saves a WAL flush per batch. And the relay's planner settings (RELAY_SESSION_SQL): this
   * session runs the claim folded into each mark.
   */
  async configureSession(db: ClientBase): Promise<void> {
    await db.query(
      `SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3; SET synchronous_commit = off; ${RELAY_SESSION_SQL}`,
    );
  }

  /**
   * Waits up to `waitMs` for the lock (pg_advisory_lock under a lock_timeout): a standby queued here
   * gets it the moment the leader's session lets go, whether it stopped (unlock) or died (session
   * end), instead of at its next poll. Returns false when the wait timed out (SQLSTATE 55P03). The
   * session keeps the lock until it ends (or unlocks); lock_timeout is set for the wait only (a
   * leader's writes on this session must not time out on row locks).
   */
  async lock(db: ClientBase, key: string, waitMs: number): Promise<boolean> {
    await db.query("SELECT set_config('lock_timeout', $1, false)", [`${Math.max(1, Math.round(waitMs))}ms`]);
    try {
      await db.query('SELECT pg_advisory_lock($1::bigint)', [key]);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') return false;
      throw err;
    } finally {
      await db.query("SELECT set_config('lock_timeout', '0', false)").catch(() => undefined);
    }
  }

  /** Releases the lock at once (a graceful stop; ending the session would release it too, a little later). */
  async unlock(db: ClientBase, key: string): Promise<void> {
    await db.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
  }

  /** `channel` is a constant identifier (LISTEN takes no parameters). */
  async listen(db: ClientBase, channel: string): Promise<void> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    await db.query(`LISTEN ${channel}`);
  }
}
