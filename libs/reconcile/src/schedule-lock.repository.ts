import type { ClientBase } from 'pg';

/**
 * The session-level advisory lock that lets one process at a time run the scheduled
 * reconciliation. Two int4 keys ("tick", "reco" in ASCII), so it is never mistaken for an
 * idempotency key's lock (one bigint) in pg_locks. Each method is one statement on the caller's
 * dedicated connection, outside any transaction.
 */
const LOCK = [0x7469636b, 0x7265636f] as const;

export class ScheduleLockRepository {
  async tryLock(db: ClientBase): Promise<boolean> {
    const { rows } = await db.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1::int, $2::int) AS got', [
      ...LOCK,
    ]);
    return rows[0].got;
  }

  async unlock(db: ClientBase): Promise<void> {
    await db.query('SELECT pg_advisory_unlock($1::int, $2::int)', [...LOCK]);
  }
}
