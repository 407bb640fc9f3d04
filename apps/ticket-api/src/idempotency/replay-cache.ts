import type { WriteResult } from '../tickets/tickets.results';

interface Entry {
  operation: string;
  fingerprint: string;
  status: number;
  body: string;
  ticketId: string;
  deduplicated: boolean;
  replayUntil: number;
}

/**
 * Committed answers of recent keys, kept in this process so that a replay needs no database round
 * trip. Safe across processes because an entry only ever holds what is already committed and never
 * changes: a key's stored response is immutable until its replay window ends, and entries expire at
 * that moment (after it, the database path answers 410). Anything but an exact hit (unknown key,
 * other payload, other operation) goes to the database as before. Bounded; oldest entries go first.
 */
export class ReplayCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries: number) {}

  /** The stored answer when `fingerprint` matches a live entry; otherwise undefined (ask the database). */
  replay(tenantId: string, key: string, operation: string, fingerprint: string, now = Date.now()): WriteResult | undefined {
    const id = `${tenantId}\n${key}`;
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (now >= e.replayUntil) {
      this.entries.delete(id);
      return undefined;
    }
    if (e.operation !== operation || e.fingerprint !== fingerprint) return undefined;
    return { outcome: 'replayed', status: e.status, body: e.body, ticketId: e.ticketId, replayed: true, deduplicated: e.deduplicated };
  }

  /** Call only with an answer whose idempotency record is committed. */
  remember(tenantId: string, key: string, entry: Entry): void {
    if (this.maxEntries <= 0) return;
    const id = `${tenantId}\n${key}`;
    this.entries.delete(id);
    this.entries.set(id, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}
