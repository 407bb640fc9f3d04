import type { FollowOptions, FollowResult, KitActionResult } from './consumer-dead-letters.types';
import { deadLetterFate, followReport, followRequeue } from './follow-report';

const cmd = {
  requeue: (id: string, g: string) => `requeue --group ${g} --id ${id} --follow`,
  list: (g: string, ticket: string | null) => `list --group ${g}${ticket ? ` --ticket ${ticket}` : ''}`,
};
const copy = (id: string, more: Partial<FollowResult['copies'][number]> = {}) => ({
  id,
  groupId: 'g',
  eventId: `e-${id}`,
  ticketId: 'T',
  state: 'handled' as const,
  ...more,
});

describe('followReport', () => {
  it('says how many copies the group handled, and how many of them were held events requeued after them', () => {
    const f: FollowResult = {
      outcome: 'handled',
      copies: [copy('a'), copy('b'), copy('c')],
      requeued: [{ id: 'c', outcome: 'requeued', message: '...' }],
    };
    expect(followReport(f, 60_000, cmd)).toEqual([
      'followed: group g handled 3 of 3 copies (1 of them of events it had held behind the first copies, requeued after them)',
    ]);
  });

  it('gives the command for a copy that failed again, and for one held behind it says it comes back with it', () => {
    const f: FollowResult = {
      outcome: 'dead-again',
      copies: [
        copy('a', { state: 'dead-again', deadLetter: 'A2', reason: 'boom', cause: 'handler_failed' }),
        copy('b', { state: 'dead-again', deadLetter: 'B2', reason: 'held', cause: 'held', heldBy: 'A2' }),
        copy('c', { state: 'dead-again', deadLetter: 'C2', reason: 'held', cause: 'held', heldBy: 'X' }),
        copy('d', { state: 'dead-again', deadLetter: 'D2', reason: 'not JSON', cause: 'invalid' }),
      ],
      requeued: [],
    };
    expect(followReport(f, 60_000, cmd)).toEqual([
      'dead again: the copy of a (event e-a) is consumer dead letter A2 of group g (boom); fix the cause, then: requeue --group g --id A2 --follow',
      'dead again: the copy of b (event e-b) is consumer dead letter B2 of group g, held behind A2: it comes back with that one',
      'dead again: the copy of c (event e-c) is consumer dead letter C2 of group g, held behind X: requeue that one (it takes this along): requeue --group g --id X --follow',
      'dead again: the copy of d (event e-d) is consumer dead letter D2 of group g, which did not parse there (not JSON): that consumer cannot take it',
      'followed: group g handled 0 of 4 copies',
    ]);
  });

  it('names a refused requeue of the held events, and on a timeout what is still unread and where to look', () => {
    const f: FollowResult = {
      outcome: 'timeout',
      copies: [copy('a'), copy('b', { state: 'not-read' })],
      requeued: [{ id: 'h', outcome: 'refused', message: 'consumer dead letter h waits behind z' }],
    };
    expect(followReport(f, 90_000, cmd)).toEqual([
      'refused: consumer dead letter h waits behind z',
      'timed out after 90 s: 1 of 2 copies not yet handled by group g (the requeue stands: the group handles them when it reads them). Is a consumer of the group running? See: list --group g --ticket T',
    ]);
  });
});

describe('followRequeue', () => {
  const requeued: KitActionResult[] = [{ id: 'a', outcome: 'requeued', message: 'requeued a' }];
  const run = async (f: FollowResult, results = requeued, json = false) => {
    const out: string[] = [];
    const progress: string[] = [];
    const seen: FollowOptions[] = [];
    const dl = {
      follow: async (_: readonly KitActionResult[], o: FollowOptions) => {
        seen.push(o);
        o.progress?.('follow: 1 of 1');
        return f;
      },
    };
    const code = await followRequeue(dl, results, {
      timeoutMs: 5_000,
      actor: { by: 'op', note: 'why' },
      json,
      out: (l) => out.push(l),
      progress: (l) => progress.push(l),
      commands: cmd,
    });
    return { code, out, progress, seen };
  };
  const handled: FollowResult = { outcome: 'handled', copies: [copy('a')], requeued: [] };

  it('exits 0 when every copy is handled, with the report on out and the progress on progress', async () => {
    const r = await run(handled);
    expect(r).toMatchObject({
      code: 0,
      out: ['followed: group g handled 1 of 1 copies'],
      progress: ['follow: 1 of 1'],
    });
    expect(r.seen[0]).toMatchObject({ timeoutMs: 5_000, actor: { by: 'op', note: 'why' } });
  });

  it('exits 1 when a copy is dead again, the held events refused, or a requeue of the command itself refused', async () => {
    expect((await run({ ...handled, outcome: 'dead-again' })).code).toBe(1);
    expect((await run({ ...handled, outcome: 'refused' })).code).toBe(1);
    const alsoRefused = [...requeued, { id: 'b', outcome: 'refused' as const, message: 'waits behind a' }];
    expect((await run(handled, alsoRefused)).code).toBe(1);
  });

  it('exits 4 on a timeout', async () => {
    expect((await run({ outcome: 'timeout', copies: [copy('a', { state: 'not-read' })], requeued: [] })).code).toBe(4);
  });

  it('with json prints one document of the results and what follow found', async () => {
    const r = await run(handled, requeued, true);
    expect(r.out.map((l) => JSON.parse(l) as unknown)).toEqual([{ dryRun: false, results: requeued, follow: handled }]);
  });
});

describe('deadLetterFate', () => {
  const item = { groupId: 'g', ticketId: 'T' };
  const held = { count: 2, first: 'H' };
  const heldLine = 'held behind it: 2 event(s) of ticket T, still dead, the first H';
  const would = (id: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: `${id}${i}`, outcome: 'would-requeue' as const, message: '...' }));

  it('a dead one: the requeue of it and how many messages it would produce (those held behind it along)', () => {
    expect(deadLetterFate({ item, heldBehind: held, next: { id: 'X', dryRun: would('X', 3) } }, cmd)).toEqual([
      heldLine,
      'next: requeue --group g --id X --follow (would produce 3 message(s), in their order)',
    ]);
  });

  it('a requeue its dry run refuses: says what it waits behind', () => {
    const refused = {
      id: 'H',
      outcome: 'refused' as const,
      message: 'consumer dead letter H waits behind B: requeue B',
    };
    expect(
      deadLetterFate(
        { item, copy: copy('a', { state: 'handled' }), heldBehind: held, next: { id: 'H', dryRun: [refused] } },
        cmd,
      ),
    ).toEqual(['copy: handled by group g', heldLine, 'next: consumer dead letter H waits behind B: requeue B']);
  });

  it('a copy not read yet: the held ones go once it is handled, and nothing to run now', () => {
    expect(deadLetterFate({ item, copy: copy('a', { state: 'not-read' }), heldBehind: held }, cmd)).toEqual([
      'copy: not read by group g yet (is a consumer of the group running?)',
      `${heldLine}; once the copy is handled: requeue --group g --id H --follow`,
    ]);
  });

  it("a copy dead again: its dead letter, or the one it is held behind, and that dead letter's state", () => {
    const failed = copy('a', { state: 'dead-again', deadLetter: 'A2', reason: 'boom', cause: 'handler_failed' });
    const gone = {
      id: 'A2',
      outcome: 'not-dead' as const,
      message: 'consumer dead letter A2 is discarded; nothing done',
    };
    expect(deadLetterFate({ item, copy: failed, next: { id: 'A2', dryRun: [gone] } }, cmd)).toEqual([
      'copy: dead-lettered again as A2 (boom)',
      'next: nothing to requeue: consumer dead letter A2 is discarded',
    ]);
    const heldAgain = copy('a', { state: 'dead-again', deadLetter: 'A2', reason: 'r', cause: 'held', heldBy: 'Z' });
    expect(deadLetterFate({ item, copy: heldAgain }, cmd)).toEqual(['copy: dead-lettered again as A2 (held behind Z)']);
  });
});
