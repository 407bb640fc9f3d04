import type { PoolClient } from 'pg';
import { KitInboxRepository } from './inbox.repository';
import { KitTables } from './kit-schema';

/**
 * Must run inside the caller's transaction: forgets every event id the group has seen, so that a
 * replay from earliest handles every event again. Only for a rebuild that empties the group's own
 * projection in the same transaction, while no member of the group is running.
 */
export function forgetGroupInbox(tx: PoolClient, groupId: string, schema?: string): Promise<number> {
  return new KitInboxRepository(new KitTables(schema)).forgetGroup(tx, groupId);
}
