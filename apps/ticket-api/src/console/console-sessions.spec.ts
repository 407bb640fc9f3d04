import { ConsoleSessions, actorOf } from './console-sessions';

const TOKEN = 'the-admin-token-0123456789';

describe('ConsoleSessions', () => {
  it('logs in with the admin token only', () => {
    const s = new ConsoleSessions(TOKEN, 60_000);
    expect(s.logIn('wrong')).toBeUndefined();
    expect(s.logIn(`${TOKEN}x`)).toBeUndefined();
    expect(s.logIn('')).toBeUndefined();
    const session = s.logIn(TOKEN)!;
    expect(session.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(s.get(session.id)).toBe(session);
    expect(actorOf(session)).toMatch(/^console:[0-9a-f]{8}$/);
    expect(actorOf(session)).not.toContain(session.id.slice(0, 8));
  });

  it('a session expires after its lifetime and is gone after log-out', () => {
    const s = new ConsoleSessions(TOKEN, 60_000);
    const a = s.logIn(TOKEN, 1_000)!;
    expect(s.get(a.id, 60_999)).toBe(a);
    expect(s.get(a.id, 61_000)).toBeUndefined();
    const b = s.logIn(TOKEN)!;
    s.logOut(b.id);
    expect(s.get(b.id)).toBeUndefined();
    expect(s.get(undefined)).toBeUndefined();
    expect(s.get('made-up')).toBeUndefined();
  });

  it('accepts only the session’s own CSRF token', () => {
    const s = new ConsoleSessions(TOKEN, 60_000);
    const a = s.logIn(TOKEN)!;
    const b = s.logIn(TOKEN)!;
    expect(s.csrfOk(a, a.csrf)).toBe(true);
    expect(s.csrfOk(a, b.csrf)).toBe(false);
    expect(s.csrfOk(a, undefined)).toBe(false);
    expect(s.csrfOk(a, '')).toBe(false);
  });

  it('keeps at most maxSessions, dropping the oldest', () => {
    const s = new ConsoleSessions(TOKEN, 60_000, 2);
    const [a, b, c] = [s.logIn(TOKEN)!, s.logIn(TOKEN)!, s.logIn(TOKEN)!];
    expect([s.get(a.id), s.get(b.id), s.get(c.id)]).toEqual([undefined, b, c]);
  });
});
