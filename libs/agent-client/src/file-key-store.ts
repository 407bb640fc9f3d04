import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { IdempotencyKeyStore } from './key-store';

interface KeyFileEntry {
  key: string;
  savedAt: string;
}

interface KeyFile {
  version: 1;
  keys: Record<string, KeyFileEntry>;
}

export interface FileKeyStoreOptions {
  /**
   * Drop entries saved longer ago than this (ms) whenever the file is rewritten. Set it to the service's
   * IDEMPOTENCY_KEY_RETENTION (30 days by default) plus a margin for how long an intent may be retried before
   * its first request reaches the service, e.g. 31 days: `savedAt` is when the key was made, the service's
   * retention starts when its first request lands, and an entry dropped while the service still keeps the
   * key lets a later call of the intent create a second ticket. Unset, entries stay until the client deletes
   * them (random keys: never).
   */
  forgetAfterMs?: number;
}

/** Writers queued per absolute path, so two stores on one file in one process do not interleave. */
const pathLocks = new Map<string, Promise<unknown>>();

/**
 * JSON file store that survives restarts. Each change rewrites the whole file through a temporary
 * file, fsync and rename, so a crash leaves either the old or the new file, never half of one.
 * Safe for any number of stores in one process; not for several processes writing one file.
 */
export class FileKeyStore implements IdempotencyKeyStore {
  private readonly path: string;
  /** Every FileKeyStore on this file shares its entries (see IdempotencyKeyStore.sharedAs). */
  readonly sharedAs: string;
  private readonly forgetAfterMs: number | undefined;

  constructor(path: string, options: FileKeyStoreOptions = {}) {
    const { forgetAfterMs } = options;
    if (forgetAfterMs !== undefined && !(Number.isFinite(forgetAfterMs) && forgetAfterMs > 0))
      throw new TypeError(
        `FileKeyStore: forgetAfterMs must be a positive number of milliseconds (the service's IDEMPOTENCY_KEY_RETENTION, 30 days by default: ${THIRTY_DAYS_MS}), got ${String(forgetAfterMs)}`,
      );
    this.path = resolve(path);
    this.sharedAs = `file:${this.path}`;
    this.forgetAfterMs = forgetAfterMs;
  }

  async get(intent: string): Promise<string | undefined> {
    // Reads wait for queued writes of this process, so a get after a set sees it.
    await pathLocks.get(this.path)?.catch(() => undefined);
    return (await this.read()).get(intent)?.key;
  }

  async set(intent: string, key: string): Promise<void> {
    await this.update((entries) => entries.set(intent, { key, savedAt: new Date().toISOString() }));
  }

  async delete(intent: string): Promise<void> {
    await this.update((entries) => entries.delete(intent));
  }

  private update(mutate: (entries: Map<string, KeyFileEntry>) => void): Promise<void> {
    const previous = pathLocks.get(this.path) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const entries = await this.read();
        mutate(entries);
        this.forgetOld(entries);
        await this.write(entries);
      });
    pathLocks.set(this.path, next);
    const forget = (): void => {
      if (pathLocks.get(this.path) === next) pathLocks.delete(this.path);
    };
    next.then(forget, forget);
    return next;
  }

  /** Under forgetAfterMs, drops the entries saved before the cut-off; a savedAt not written by this store stays. */
  private forgetOld(entries: Map<string, KeyFileEntry>): void {
    if (this.forgetAfterMs === undefined) return;
    const cutoff = Date.now() - this.forgetAfterMs;
    for (const [intent, entry] of entries) {
      const savedAt =
        typeof entry.savedAt === 'string' && ISO_INSTANT.test(entry.savedAt) ? Date.parse(entry.savedAt) : NaN;
      if (savedAt < cutoff) entries.delete(intent);
    }
  }

  private async read(): Promise<Map<string, KeyFileEntry>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if (isErrnoException(error) && error.code === 'ENOENT') return new Map();
      throw error;
    }
    if (text.trim() === '') return new Map(); // an empty file (e.g. made by `touch`) is an empty store
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new SyntaxError(
        `${this.path} is not JSON (${(error as Error).message}): not an idempotency key store file`,
        { cause: error },
      );
    }
    // A SyntaxError: the file is wrong until someone fixes or moves it (the client reports it as permanent).
    if (!isKeyFile(parsed)) throw new SyntaxError(`${this.path} is not an idempotency key store file`);
    // Entries become a Map so an intent named "__proto__" is just another key.
    return new Map(Object.entries(parsed.keys));
  }

  private async write(entries: Map<string, KeyFileEntry>): Promise<void> {
    const file: KeyFile = { version: 1, keys: Object.fromEntries(entries) };
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const handle = await open(temporary, 'w', 0o600);
      try {
        await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
    await syncDirectory(dirname(this.path));
  }
}

const THIRTY_DAYS_MS = 30 * 24 * 60 * 60 * 1000;

/** The form Date.toISOString() writes (savedAt); anything else (a hand edit) is not taken as a time. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Makes the rename itself durable; not every platform allows opening a directory, hence best effort. */
async function syncDirectory(directory: string): Promise<void> {
  try {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort (Windows cannot fsync a directory).
  }
}

/** Duck-typed: errors from another realm (e.g. Jest's sandbox) fail `instanceof Error`. */
function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return typeof error === 'object' && error !== null && 'code' in error;
}

function isKeyFile(value: unknown): value is KeyFile {
  if (typeof value !== 'object' || value === null) return false;
  const keys = (value as { keys?: unknown }).keys;
  if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) return false;
  return Object.values(keys).every(
    (entry: unknown) =>
      typeof entry === 'object' && entry !== null && typeof (entry as { key?: unknown }).key === 'string',
  );
}
