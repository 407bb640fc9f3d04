import { ResponseCache } from './response-cache';

const ANSWER = { outcome: 'created', status: 201, body: '{"id":"t1"}', ticketId: 't1' };
const entry = (over: Partial<Parameters<ResponseCache['remember']>[2]> = {}) => ({
  operation: 'ticket.create',
  fingerprint: 'f1',
  answer: ANSWER,
  replayUntil: 1_000,
  ...over,
});

describe('ResponseCache', () => {
  it('answers an exact hit inside the window, byte for byte', () => {
    const c = new ResponseCache(10);
    c.remember('tenant', 'k', entry());
    expect(c.answer('tenant', 'k', 'ticket.create', 'f1', 999)).toEqual(ANSWER);
  });

  it('sends everything else to the database: other tenant, payload, operation, or past the window', () => {
    const c = new ResponseCache(10);
    c.remember('tenant', 'k', entry());
    expect(c.answer('other', 'k', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.answer('tenant', 'k', 'ticket.create', 'f2', 0)).toBeUndefined();
    expect(c.answer('tenant', 'k', 'ticket.cancel', 'f1', 0)).toBeUndefined();
    expect(c.answer('tenant', 'k', 'ticket.create', 'f1', 1_000)).toBeUndefined();
    expect(c.answer('tenant', 'k', 'ticket.create', 'f1', 0)).toBeUndefined(); // dropped once expired
  });

  it('is bounded: the oldest entry goes first; size 0 keeps nothing', () => {
    const c = new ResponseCache(2);
    c.remember('t', 'a', entry());
    c.remember('t', 'b', entry());
    c.remember('t', 'c', entry());
    expect(c.answer('t', 'a', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.answer('t', 'c', 'ticket.create', 'f1', 0)).toBeDefined();
    const off = new ResponseCache(0);
    off.remember('t', 'a', entry());
    expect(off.answer('t', 'a', 'ticket.create', 'f1', 0)).toBeUndefined();
  });

  it('is bounded by the characters of the bodies it holds too: large answers push the oldest out; one larger than the bound is not kept', () => {
    const body = (n: number) => ({ ...ANSWER, body: 'x'.repeat(n) });
    const c = new ResponseCache(100, 1_000);
    c.remember('t', 'a', entry({ answer: body(400) }));
    c.remember('t', 'b', entry({ answer: body(400) }));
    expect(c.size()).toEqual({ entries: 2, chars: 800 });
    c.remember('t', 'c', entry({ answer: body(400) })); // 1,200 > 1,000: 'a' goes
    expect(c.answer('t', 'a', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.answer('t', 'b', 'ticket.create', 'f1', 0)).toBeDefined();
    expect(c.size()).toEqual({ entries: 2, chars: 800 });
    c.remember('t', 'huge', entry({ answer: body(1_001) }));
    expect(c.answer('t', 'huge', 'ticket.create', 'f1', 0)).toBeUndefined();
    expect(c.size()).toEqual({ entries: 2, chars: 800 });
    // Remembering a key again replaces its entry and its count; an expired entry gives its count back.
    c.remember('t', 'b', entry({ answer: body(100) }));
    expect(c.size()).toEqual({ entries: 2, chars: 500 });
    expect(c.answer('t', 'b', 'ticket.create', 'f1', 1_000)).toBeUndefined();
    expect(c.size()).toEqual({ entries: 1, chars: 400 });
  });
});
