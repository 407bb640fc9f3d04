import type { PoolClient } from 'pg';
import type { TicketEvent } from '@tickets/event-consumer';
import { hotInboxStatements, InboxRepository, type RecordBatchInput } from './inbox.repository';

const event = (n: number): TicketEvent =>
  ({
    id: `00000000-0000-4000-8000-00000000000${n}`,
    type: 'ticket.created.v1',
    tenantId: '00000000-0000-4000-8000-0000000000aa',
    ticketId: `00000000-0000-4000-8000-00000000001${n}`,
  }) as TicketEvent;

describe('the notifier statement warmed at start is the one every chunk sends (no database)', () => {
  const sent: Array<{ name?: string; text: string }> = [];
  const db = {
    query: async (q: { name?: string; text: string }) => {
      sent.push(q);
      return { rows: [{ processed: 0, pending: 0, noTarget: 0, leased: null }] };
    },
  } as unknown as PoolClient;
  const chunk = (over: Partial<RecordBatchInput>): RecordBatchInput => ({
    groupId: 'notifier',
    topic: 'ticket-events',
    partition: 2,
    defaultWebhookUrl: 'https://hooks.example.com/t',
    events: [event(1), event(2), event(1)],
    offsets: ['7', '8', '9'],
    values: [Buffer.from('{}'), Buffer.from('{}'), Buffer.from('{}')],
    invalid: [],
    ...over,
  });

  it('with and without a lease, whatever the chunk holds', async () => {
    const repo = new InboxRepository();
    await repo.recordBatch(
      db,
      chunk({ lease: { token: '00000000-0000-4000-8000-0000000000ff', limit: 5, leaseMs: 30_000 } }),
    );
    await repo.recordBatch(db, chunk({ events: [], offsets: [], values: [], defaultWebhookUrl: null }));

    expect(sent.map((q) => q.name)).toEqual(['inbox-record-batch-lease', 'inbox-record-batch']);
    expect(hotInboxStatements(true)).toEqual([sent[0].text]);
    expect(hotInboxStatements(false)).toEqual([sent[1].text]);
    expect(sent[0].text).not.toBe(sent[1].text);
  });
});
