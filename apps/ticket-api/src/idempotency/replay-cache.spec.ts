import { ReplayCache } from './replay-cache';

const entry = (over: Partial<Parameters<ReplayCache['remember']>[2]> = {}) => ({
  operation: 'ticket.create',
  fingerprint: 'f1',
  status: 201,
  body: '{"id":"t1"}',
  ticketId: 't1',
  deduplicated: false,
  replayUntil: 1_000,
  ...over,
});

describe('ReplayCache', () => {
  it('replays an exact hit inside the window, byte for byte', () => {
    const c = new ReplayCache(10);
    c.remember('tenant', 'k', entry());
    expect(c.replay('tenant', 'k', 'ticket.create', 'f1', 999)).toEqual({ outcome: 'replayed', status: 201, body: '{"id":"t1"}', ticketId: 't1', replayed: true, deduplicated: false });
  });

  it('sends everything else to the database: other tenant, payload, operation, or past the window', () => {
    const c = new ReplayCache(10);
    c.remember('tenant', 'k', entry());
    expect(c.replay('other', 'k', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.replay('tenant', 'k', 'ticket.create', 'f2', 0)).toBeUndefined();
    expect(c.replay('tenant', 'k', 'ticket.cancel', 'f1', 0)).toBeUndefined();
    expect(c.replay('tenant', 'k', 'ticket.create', 'f1', 1_000)).toBeUndefined();
    expect(c.replay('tenant', 'k', 'ticket.create', 'f1', 0)).toBeUndefined(); // dropped once expired
  });

  it('is bounded: the oldest entry goes first; size 0 keeps nothing', () => {
    const c = new ReplayCache(2);
    c.remember('t', 'a', entry());
    c.remember('t', 'b', entry());
    c.remember('t', 'c', entry());
    expect(c.replay('t', 'a', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.replay('t', 'c', 'ticket.create', 'f1', 0)).toBeDefined();
    const off = new ReplayCache(0);
    off.remember('t', 'a', entry());
    expect(off.replay('t', 'a', 'ticket.create', 'f1', 0)).toBeUndefined();
  });
});
