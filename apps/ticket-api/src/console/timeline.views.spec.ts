// The timeline tells the order things happened in: an event goes to Kafka (the record's timestamp)
// before a consumer reads it, and the outbox row is marked published only after the broker's ack,
// which a fast consumer can beat.
import { ConsoleSessions } from './console-sessions';
import type { TicketTimelineRows } from './ticket-timeline.repository';
import { timelinePage } from './timeline.views';

const session = new ConsoleSessions('the-admin-token-0123456789', 60_000).logIn('the-admin-token-0123456789')!;
const t0 = Date.parse('2026-11-30T12:00:00Z');
const at = (ms: number) => new Date(t0 + ms);
const ID = '0b7c3a9e-1111-4222-8333-444455556666';
const EVENT = '5d2f8c1a-2222-4333-8444-555566667777';

function rows(kafkaTimestamp: Date | null): TicketTimelineRows {
  return {
    ticket: {
      id: ID,
      tenant: 'acme',
      title: 't',
      status: 'open',
      priority: 'normal',
      externalRef: null,
      idempotencyKey: null,
      createdAt: at(0),
      cancelledAt: null,
    },
    keys: [],
    outbox: [
      {
        seq: '41',
        eventId: EVENT,
        eventType: 'ticket.created.v1',
        createdAt: at(2),
        publishedAt: at(87),
        kafkaTimestamp,
        attempts: 0,
        lastError: null,
        traceparent: null,
        dead: false,
        deadAt: null,
      },
    ],
    inbox: [
      {
        groupId: 'notifications',
        eventId: EVENT,
        eventType: 'ticket.created.v1',
        topic: 'ticket-events',
        partition: 0,
        offset: '7',
        duplicates: 0,
        receivedAt: at(56),
      },
    ],
    notifications: [],
    actions: [],
  };
}

/** The timeline's entries, in the order the page lists them, as text. */
function entries(page: string): string[] {
  const list = /<ol class="timeline">([\s\S]*?)<\/ol>/.exec(page)![1];
  return [...list.matchAll(/<li[^>]*>([\s\S]*?)<\/li>/g)].map((m) => m[1].replace(/<[^>]+>/g, ''));
}

describe('the ticket timeline', () => {
  it("lists the record's Kafka timestamp as published, before the consumer read it, and the mark after", () => {
    const list = entries(timelinePage(rows(at(20)), session, 'gone'));
    const index = (text: string) => list.findIndex((e) => e.includes(text));
    expect(list).toHaveLength(5);
    expect(index('ticket created')).toBe(0);
    expect(index('outbox row seq 41: ')).toBe(1);
    expect(list[2]).toContain("published to Kafka: ticket.created.v1 (the record's timestamp)");
    expect(list[2]).toContain('(+20 ms)');
    expect(list[3]).toContain('consumed by group notifications');
    expect(list[4]).toContain("outbox row seq 41 marked published after the broker's ack");
    expect(list[4]).toContain('(+87 ms)');
  });

  it('falls back to the mark for a row published before record timestamps were stored, and says so', () => {
    const list = entries(timelinePage(rows(null), session, 'gone'));
    expect(list).toHaveLength(4);
    expect(list[3]).toContain("published to Kafka: ticket.created.v1 (the time of the mark, after the broker's ack)");
  });

  it('says when a row still queued was rejected by the broker and is being retried', () => {
    const t = rows(null);
    t.outbox[0] = { ...t.outbox[0], publishedAt: null, attempts: 2, lastError: 'kafka_rejected: too large' };
    const list = entries(timelinePage(t, session, 'gone'));
    expect(
      list.some((e) =>
        e.includes('the broker rejected it 2 time(s), the relay retries it (kafka_rejected: too large)'),
      ),
    ).toBe(true);
    expect(list.some((e) => e.includes('published to Kafka'))).toBe(false);
  });
});
