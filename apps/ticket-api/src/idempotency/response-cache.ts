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
 * other payload, other operation) goes to the database as before. Bounded by entries and by the
 * characters of the bodies it holds (bodies go up to BODY_LIMIT_BYTES each, so a count alone would
 * let large tickets fill the heap); oldest entries go first.
 */
export class ResponseCache {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars = Number.POSITIVE_INFINITY,
  ) {}

  /** Entries held, and the characters of their bodies. */
  size(): { entries: number; chars: number } {
    return { entries: this.entries.size, chars: this.chars };
  }

  /** The stored answer when `fingerprint` matches a live entry; otherwise undefined (ask the database). */
  answer(
    tenantId: string,
    key: string,
    operation: string,
    fingerprint: string,
    now = Date.now(),
  ): CommandAnswer | undefined {
    const id = `${tenantId}\n${key}`;
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (now >= entry.replayUntil) {
      this.drop(id, entry);
      return undefined;
    }
    if (entry.operation !== operation || entry.fingerprint !== fingerprint) return undefined;
    return entry.answer;
  }

  /** Call only with an answer whose idempotency record is committed. */
  remember(tenantId: string, key: string, entry: Entry): void {
    const chars = entry.answer.body.length;
    if (this.maxEntries <= 0 || chars > this.maxChars) return;
    const id = `${tenantId}\n${key}`;
    const old = this.entries.get(id);
    if (old) this.drop(id, old);
    this.entries.set(id, entry);
    this.chars += chars;
    while (this.entries.size > this.maxEntries || this.chars > this.maxChars) {
      const [oldestId, oldest] = this.entries.entries().next().value as [string, Entry];
      this.drop(oldestId, oldest);
    }
  }

  private drop(id: string, entry: Entry): void {
    this.entries.delete(id);
    this.chars -= entry.answer.body.length;
  }
}
