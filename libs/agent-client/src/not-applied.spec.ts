import { notAppliedFields } from './not-applied';
import type { Ticket } from './ticket-client.types';

const EXISTING: Ticket = {
  id: '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11',
  title: 'Printer on fire',
  description: null,
  priority: 'high',
  status: 'open',
  externalRef: 'ORD-1',
  requester: { name: 'Ada', email: 'ada@example.com' },
  metadata: { source: 'email', tags: ['a', 'b'] },
  createdAt: '2026-11-30T10:15:00.000Z',
  updatedAt: '2026-11-30T10:15:00.000Z',
};

describe('notAppliedFields', () => {
  it('lists every field sent that the existing ticket does not have, in the client names', () => {
    expect(
      notAppliedFields(
        {
          title: 'Something else',
          description: 'details',
          priority: 'low',
          externalRef: 'ORD-1',
          requester: { name: 'Bob' },
          metadata: { source: 'chat' },
        },
        EXISTING,
      ),
    ).toEqual(['title', 'description', 'priority', 'requester', 'metadata']);
  });

  it('is empty when what was sent matches, whatever the key order; a field left out was not sent', () => {
    expect(
      notAppliedFields(
        {
          title: '  Printer on fire ',
          externalRef: 'ORD-1',
          requester: { email: 'ada@example.com', name: 'Ada' },
          metadata: { tags: ['a', 'b'], source: 'email' },
        },
        EXISTING,
      ),
    ).toEqual([]);
  });

  it('tells arrays from objects and order inside arrays', () => {
    expect(
      notAppliedFields({ title: EXISTING.title, metadata: { source: 'email', tags: ['b', 'a'] } }, EXISTING),
    ).toEqual(['metadata']);
    expect(
      notAppliedFields({ title: EXISTING.title, metadata: { source: 'email', tags: { 0: 'a', 1: 'b' } } }, EXISTING),
    ).toEqual(['metadata']);
  });

  it('compares what goes over the wire: JSON drops undefined and turns a Date into its string and NaN into null', () => {
    const stored: Ticket = {
      ...EXISTING,
      requester: { name: 'Ada' },
      metadata: { source: 'email', at: '2026-11-30T10:15:00.000Z', score: null, tags: [null] },
    };
    expect(
      notAppliedFields(
        {
          title: EXISTING.title,
          description: undefined,
          requester: { name: 'Ada', email: undefined },
          metadata: {
            source: 'email',
            gone: undefined,
            at: new Date('2026-11-30T10:15:00.000Z'),
            score: NaN,
            tags: [undefined],
          },
        },
        stored,
      ),
    ).toEqual([]);
    // The JSON form still differs where the stored ticket does: a Date of another instant is listed.
    expect(
      notAppliedFields({ title: EXISTING.title, metadata: { ...stored.metadata, at: new Date(0) } }, stored),
    ).toEqual(['metadata']);
  });
});
