import type { Client, Pool } from 'pg';
import type { KitTables } from './kit-schema';

/** The pause request of a group, as its members read it. */
export interface PauseState {
  requestId: string;
  requestedBy: string;
  expiresAt: Date;
  /** expires_at is still ahead, by the database's clock (members and the replay command share it). */
  inForce: boolean;
}

export type PauseClaim = { claimed: true; requestId: string } | { claimed: false; holder: PauseState };

/**
 * replay_pauses of the kit's schema: one row per group whose members are asked to leave it (a replay
 * moving its offsets). Every statement is its own transaction; request and release announce themselves
 * on the schema's own channel (KitTables.pauseChannel), the payload being the group id.
 */
export class GroupPauseRepository {
  private readonly stateSql: string;
  private readonly requestSql: string;
  private readonly renewSql: string;
  private readonly releaseSql: string;

  constructor(private readonly t: KitTables) {
    this.stateSql = `SELECT request_id, requested_by, expires_at, expires_at > now() AS in_force FROM ${t.pauses} WHERE group_id = $1`;
    this.requestSql = `
      WITH up AS (
        INSERT INTO ${t.pauses} AS p (group_id, request_id, requested_by, expires_at)
        VALUES ($1, $2, $3, now() + $4::bigint * interval '1 millisecond')
        ON CONFLICT (group_id) DO UPDATE
          SET request_id = EXCLUDED.request_id, requested_by = EXCLUDED.requested_by, requested_at = now(), expires_at = EXCLUDED.expires_at
          WHERE p.expires_at <= now()
        RETURNING p.group_id, p.request_id)
      SELECT request_id, pg_notify($5, group_id) FROM up`;
    this.renewSql = `UPDATE ${t.pauses} SET expires_at = now() + $3::bigint * interval '1 millisecond' WHERE group_id = $1 AND request_id = $2`;
    this.releaseSql = `WITH d AS (DELETE FROM ${t.pauses} WHERE group_id = $1 AND request_id = $2 RETURNING group_id) SELECT pg_notify($3, group_id) FROM d`;
  }

  /** The channel the requests and releases of this schema are announced on. */
  get channel(): string {
    return this.t.pauseChannel;
  }

  /** Own statement: the group's request, in force or expired; undefined when there is none. */
  async state(db: Pool, groupId: string): Promise<PauseState | undefined> {
    const r = await db.query<{ request_id: string; requested_by: string; expires_at: Date; in_force: boolean }>(
      this.stateSql,
      [groupId],
    );
    const row = r.rows[0];
    return (
      row && {
        requestId: row.request_id,
        requestedBy: row.requested_by,
        expiresAt: row.expires_at,
        inForce: row.in_force,
      }
    );
  }

  /**
   * Own statement: asks the group's members to leave for `leaseMs` (renew to keep them out). An
   * expired request is taken over; one still in force is left alone and returned as the holder.
   */
  async request(
    db: Pool,
    groupId: string,
    requestId: string,
    requestedBy: string,
    leaseMs: number,
  ): Promise<PauseClaim> {
    const r = await db.query<{ request_id: string }>(this.requestSql, [
      groupId,
      requestId,
      requestedBy,
      leaseMs,
      this.t.pauseChannel,
    ]);
    if (r.rows.length > 0) return { claimed: true, requestId };
    const holder = await this.state(db, groupId);
    // Released between the two statements: try once more.
    return holder ? { claimed: false, holder } : this.request(db, groupId, requestId, requestedBy, leaseMs);
  }

  /** Own statement: keeps the request in force `leaseMs` more; false when it is no longer this request's. */
  async renew(db: Pool, groupId: string, requestId: string, leaseMs: number): Promise<boolean> {
    const r = await db.query(this.renewSql, [groupId, requestId, leaseMs]);
    return (r.rowCount ?? 0) > 0;
  }

  /** Own statement: ends the request (only this one), so the members rejoin. */
  async release(db: Pool, groupId: string, requestId: string): Promise<void> {
    await db.query(this.releaseSql, [groupId, requestId, this.t.pauseChannel]);
  }

  /** On a dedicated connection: the announcements of this schema's requests and releases arrive as 'notification'. */
  async listen(client: Client): Promise<void> {
    // A channel is an identifier, not a parameter: KitTables validated the schema it is made of, and quoted it.
    await client.query(`LISTEN ${this.t.quotedPauseChannel}`);
  }
}
