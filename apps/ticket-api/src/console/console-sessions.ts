import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface ConsoleSession {
  id: string;
  /** A short public name of the session for the audit trail and the log (not derived from the secret id). */
  label: string;
  /** Sent in a hidden field of every form; a POST without it is refused (a page elsewhere cannot know it). */
  csrf: string;
  expiresAt: number;
  /** The result of the last action, shown once on the next page. */
  flash?: string[];
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time equality of two secrets: their digests have one length, so the time says nothing about either. */
export function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(given), expected);
}

/**
 * The console's sessions, in this process's memory: a random id in an HttpOnly cookie, a CSRF token
 * per session, a fixed lifetime from the log-in. An API restart logs every operator out.
 */
export class ConsoleSessions {
  private readonly sessions = new Map<string, ConsoleSession>();
  private readonly token: Buffer;

  constructor(
    adminToken: string,
    private readonly ttlMs: number,
    private readonly maxSessions = 1_000,
  ) {
    this.token = digest(adminToken);
  }

  /** A new session when `given` is the admin token, else undefined. */
  logIn(given: string, now = Date.now()): ConsoleSession | undefined {
    if (!sameSecret(given, this.token)) return undefined;
    this.sweep(now);
    if (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
    const session = {
      id: randomBytes(32).toString('base64url'),
      label: randomBytes(4).toString('hex'),
      csrf: randomBytes(32).toString('base64url'),
      expiresAt: now + this.ttlMs,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session of a cookie value; an expired one is forgotten. */
  get(id: string | undefined, now = Date.now()): ConsoleSession | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (s.expiresAt <= now) {
      this.sessions.delete(id);
      return undefined;
    }
    return s;
  }

  logOut(id: string): void {
    this.sessions.delete(id);
  }

  /** Whether a form's CSRF field is this session's token (constant time). */
  csrfOk(session: ConsoleSession, given: string | undefined): boolean {
    return given !== undefined && sameSecret(given, digest(session.csrf));
  }

  private sweep(now: number): void {
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
  }
}

/** The audit name of a session's actions: `console:<label>`. */
export const actorOf = (s: ConsoleSession) => `console:${s.label}`;
