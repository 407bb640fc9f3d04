import type { CommandAnswer } from './keyed-command.types';

interface Entry {
  operation: string;
  fingerprint: string;
  answer: CommandAnswer;
  replayUntil: number;
}

/**
 * Committed answers of recent keys, kept in this process so that a retry needs no database round
 * trip. Safe across processes because an entry only ever holds what is already committed and never
 * changes: a key's stored response is immutable until its replay window ends, and entries expire at
 * that moment (after it, the database path answers 410). Anything but an exact hit (unknown key,
 * other payload, other operation) goes to the database as before. Bounded; oldest entries go first.
 */
export class ResponseCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries: number) {}

  /** The stored answer when `fingerprint` matches a live entry; otherwise undefined (ask the database). */
  answer(tenantId: string, key: string, operation: string, fingerprint: string, now = Date.now()): CommandAnswer | undefined {
    const id = `${tenantId}\n${key}`;
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (now >= entry.replayUntil) {
      this.entries.delete(id);
      return undefined;
    }
    if (entry.operation !== operation || entry.fingerprint !== fingerprint) return undefined;
    return entry.answer;
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
