// Data in the console comes from agents (titles, keys, externalRefs) and from receivers (error texts):
// every page must show it as text. Each page is rendered with hostile values in every field it shows.
import { ConsoleSessions } from './console-sessions';
import { deadLetterPage, deadLettersPage } from './dead-letters.views';
import { overviewPage } from './overview.views';
import { lookupPage, timelinePage } from './timeline.views';

const EVIL = `<script>alert(1)</script>"><img src=x onerror=alert(2)>'`;
const session = new ConsoleSessions('the-admin-token-0123456789', 60_000).logIn('the-admin-token-0123456789')!;
const at = new Date('2026-11-30T12:00:00Z');
const ID = '0b7c3a9e-1111-4222-8333-444455556666';

/** No element or attribute came from the data: only the escaped text is there. */
function expectInert(page: string) {
  expect(page).not.toContain('<script>');
  expect(page).not.toContain('<img');
  expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;&#39;');
}

describe('console pages escape data from agents and receivers', () => {
  it('the ticket timeline', () => {
    const page = timelinePage(
      {
        ticket: {
          id: ID,
          tenant: EVIL,
          title: EVIL,
          status: 'open',
          priority: 'normal',
          externalRef: EVIL,
          idempotencyKey: EVIL,
          createdAt: at,
          cancelledAt: null,
        },
        keys: [
          {
            key: EVIL,
            operation: 'create',
            outcome: 'created',
            responseStatus: 201,
            createdAt: at,
            replayUntil: at,
            expiresAt: at,
          },
        ],
        outbox: [
          {
            seq: '1',
            eventId: ID,
            eventType: EVIL,
            createdAt: at,
            publishedAt: at,
            kafkaTimestamp: at,
            attempts: 1,
            lastError: EVIL,
            traceparent: EVIL,
            dead: true,
            deadAt: at,
          },
        ],
        inbox: [
          {
            groupId: EVIL,
            eventId: ID,
            eventType: EVIL,
            topic: EVIL,
            partition: 0,
            offset: '7',
            duplicates: 0,
            receivedAt: at,
          },
        ],
        notifications: [
          {
            id: ID,
            groupId: EVIL,
            eventId: ID,
            eventType: EVIL,
            status: 'dead',
            attempts: 1,
            targetUrl: EVIL,
            lastError: EVIL,
            createdAt: at,
            deliveredAt: null,
            attemptLog: [{ attemptNo: 1, statusCode: 400, error: EVIL, durationMs: 3, at: at.toISOString() }],
          },
        ],
        actions: [{ kind: 'notification', action: 'requeue', targetId: EVIL, actor: EVIL, note: EVIL, at }],
      },
      session,
      'gone',
    );
    expectInert(page);
    // The requeue button of the dead notification carries the session's CSRF token.
    expect(page).toContain(`name="csrf" value="${session.csrf}"`);
  });

  it('the lookup, the dead letters and the overview', () => {
    expectInert(
      lookupPage(
        EVIL,
        [
          {
            id: ID,
            tenant: EVIL,
            title: EVIL,
            status: 'open',
            priority: 'normal',
            externalRef: null,
            idempotencyKey: null,
            createdAt: at,
            cancelledAt: null,
          },
        ],
        session,
      ),
    );
    const item = {
      kind: 'notification' as const,
      id: ID,
      state: 'dead' as const,
      tenant: EVIL,
      ticketId: ID,
      eventId: ID,
      eventType: EVIL,
      reason: EVIL,
      attempts: 1,
      deadAt: at,
      where: EVIL,
    };
    expectInert(
      deadLettersPage([item], { kind: 'notification', tenant: EVIL, group: EVIL, reason: EVIL, all: false }, session),
    );
    expectInert(deadLettersPage([], { kind: 'consumer', tenant: EVIL, group: EVIL, reason: EVIL, all: true }, session));
    expectInert(
      deadLetterPage(
        {
          item,
          content: { title: EVIL },
          attempts: [{ attemptNo: 1, statusCode: 400, error: EVIL, at }],
          history: [{ action: 'requeue', actor: EVIL, note: EVIL, detail: {}, at }],
        },
        { kind: 'notification', id: ID, outcome: 'would-requeue', message: EVIL },
        session,
      ),
    );
    expectInert(
      overviewPage(
        {
          outbox: { pending: 0, oldestPendingAgeMs: 0, deadLetters: 0, publishedPerMinute: [{ minute: at, count: 2 }] },
          notifier: { groupId: EVIL, pending: 0, oldestDueAgeMs: 0 },
          lag: {
            ok: true,
            topic: EVIL,
            groups: [
              {
                groupId: EVIL,
                state: EVIL,
                members: 0,
                totalLag: 1,
                partitions: [{ partition: 0, committed: null, high: '1', lag: 1 }],
              },
            ],
          },
          outcomes: { state: 'ok', outcomes: [EVIL], minutes: [{ at, counts: { [EVIL]: 1 } }] },
          deadLetters: { outbox: 0, consumer: 0, notification: 0 },
          reconcile: {
            id: '1',
            trigger: EVIL,
            startedAt: at,
            finishedAt: at,
            ticketsChecked: 1,
            duplicateTickets: 0,
            findings: [{ check: EVIL, count: 1, sample: [EVIL], advice: EVIL }],
          },
        },
        session,
      ),
    );
  });

  it("a consumer dead letter's copy and the events held behind it", () => {
    const item = {
      kind: 'consumer' as const,
      id: ID,
      state: 'requeued' as const,
      tenant: null,
      ticketId: ID,
      eventId: ID,
      eventType: 'ticket.created.v1',
      reason: 'boom',
      attempts: null,
      deadAt: at,
      where: 'group g, t[0]@1',
    };
    const copy = { id: ID, groupId: EVIL, eventId: ID, ticketId: ID };
    const AGAIN = '0b7c3a9e-2222-4222-8333-444455556666';
    const HELD = '0b7c3a9e-3333-4222-8333-444455556666';
    const show = (consumer: NonNullable<Parameters<typeof deadLetterPage>[0]['consumer']>) =>
      deadLetterPage({ item, content: {}, history: [], consumer }, undefined, session);
    const refused = { id: HELD, outcome: 'refused' as const, message: EVIL };
    const again = show({
      groupId: EVIL,
      copy: { ...copy, state: 'dead-again', deadLetter: AGAIN, reason: EVIL, cause: 'handler_failed' },
      heldBehind: { count: 2, first: HELD },
      next: { id: AGAIN, dryRun: [refused] },
    });
    expectInert(again);
    expect(again).toContain(
      `dead-lettered again as <a class="mono" href="/dead-letters/show?kind=consumer&id=${AGAIN}">`,
    );
    expect(again).toContain(
      `2 event(s) of its ticket, still dead, the first <a class="mono" href="/dead-letters/show?kind=consumer&id=${HELD}">`,
    );
    const would = (id: string) => ({ id, outcome: 'would-requeue' as const, message: '...' });
    const handled = show({
      groupId: 'g',
      copy: { ...copy, state: 'handled' },
      heldBehind: { count: 1, first: HELD },
      next: { id: HELD, dryRun: [would(HELD), would(AGAIN)] },
    });
    expect(handled).toContain('<th>copy</th><td colspan="3">handled by group g</td>');
    expect(handled).toContain(
      `<th>next</th><td colspan="3">requeue <a class="mono" href="/dead-letters/show?kind=consumer&id=${HELD}">${HELD}</a>: it would produce 2 message(s), in their order</td>`,
    );
    const unread = show({ groupId: 'g', copy: { ...copy, state: 'not-read' } });
    expect(unread).toContain('not read by group g yet');
    expect(unread).not.toContain('held behind it');
    expect(unread).not.toContain('<th>next</th>');
  });

  it('charts the sampled idempotency outcomes with the hit rate (replays / keyed requests)', () => {
    const page = overviewPage(
      {
        outbox: { pending: 0, oldestPendingAgeMs: 0, deadLetters: 0, publishedPerMinute: [] },
        notifier: { groupId: 'g', pending: 0, oldestDueAgeMs: 0 },
        lag: { ok: false, topic: 't', error: 'x' },
        outcomes: {
          state: 'ok',
          outcomes: ['new', 'replay'],
          minutes: [
            { at, counts: { new: 2, replay: 1 } },
            { at, counts: { new: 1, replay: 0 } },
          ],
        },
        deadLetters: { outbox: 0, consumer: 0, notification: 0 },
        reconcile: null,
      },
      session,
    );
    expect(page).toContain('4 keyed request(s); idempotency hit rate (answered from a stored key): 25.0 %');
    expect(page).toContain('<title>12:00 replay: 1</title>');
  });

  it('says when there is no reconcile run and when the outcome metric is missing', () => {
    const page = overviewPage(
      {
        outbox: { pending: 0, oldestPendingAgeMs: 0, deadLetters: 0, publishedPerMinute: [] },
        notifier: { groupId: 'g', pending: 0, oldestDueAgeMs: 0 },
        lag: { ok: false, topic: 't', error: 'broker down' },
        outcomes: { state: 'missing', metric: 'tickets_idempotency_outcomes_total' },
        deadLetters: { outbox: 0, consumer: 0, notification: 0 },
        reconcile: null,
      },
      session,
    );
    expect(page).toContain('No run yet.');
    // The dead-notification tile counts the notifier's group, and its link lists that group's only.
    expect(page).toContain('href="/dead-letters?kind=notification&amp;group=g"');
    expect(page).toContain('href="/dead-letters?kind=consumer"');
    expect(page).toContain('<code>tickets_idempotency_outcomes_total</code> is missing');
    expect(page).toContain('Cannot read the offsets from Kafka: broker down');
  });
});
