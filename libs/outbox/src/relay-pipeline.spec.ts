import { randomUUID } from 'node:crypto';
import type { Message } from 'kafkajs';
import { createLogger } from '@tickets/logger';
import type { SleepEnd } from '@tickets/sleep';
import type { OutboxRow } from './outbox-message';
import type { DeadLetterEntry, PublishedRows, Queryable } from './outbox.repository';
import { RelayPipeline, type Publisher, type RelayPipelineDeps } from './relay-pipeline';

// The relay pipeline against a fake repository (an in-memory outbox) and a fake publisher: no
// database, no broker. Every event the pipeline causes goes into one `trace`, in order.

type Trace = Array<{
  op: 'send' | 'mark' | 'park' | 'dead' | 'drop' | 'vacuum' | 'sleep';
  seqs?: string[];
  db?: 'writer' | 'reader';
  ms?: number;
  wakeable?: boolean;
}>;

const writer: Queryable = { query: () => Promise.reject(new Error('the fake repository does not query')) };
const reader: Queryable = { query: () => Promise.reject(new Error('the fake repository does not query')) };
const who = (db: Queryable) => (db === writer ? 'writer' : db === reader ? 'reader' : undefined);

function eventRow(seq: number, kind: 'created' | 'cancelled', ticketId: string, valid = true): OutboxRow {
  const eventId = randomUUID();
  const now = new Date().toISOString();
  const type = `ticket.${kind}.v1`;
  const payload = {
    id: eventId,
    type,
    occurredAt: now,
    tenantId: randomUUID(),
    ticketId,
    idempotencyKey: `k-${seq}`,
    data: {
      id: ticketId,
      title: 't',
      description: null,
      priority: valid ? 'normal' : 'extreme', // 'extreme' is not in the contract
      status: kind === 'created' ? 'open' : 'cancelled',
      externalRef: null,
      requester: null,
      metadata: null,
      createdAt: now,
      updatedAt: now,
    },
  };
  return {
    seq: String(seq),
    eventId,
    aggregateId: ticketId,
    eventType: type,
    payload: JSON.stringify(payload),
    headers: {},
    attempts: 0,
  };
}

/** outbox_events + outbox_dead_letters in memory, with the claim's rules (seq order, exclusions, blockedBy). */
class FakeOutbox {
  readonly dead: Array<DeadLetterEntry & { eventId: string }> = [];
  readonly kafkaTimestamps: number[] = []; // the Kafka record timestamp of each mark
  private readonly deadTickets = new Map<string, string>(); // dead letter seq -> ticket id
  private readonly published = new Set<string>();
  private readonly rows: OutboxRow[];

  constructor(
    rows: OutboxRow[],
    private readonly trace: Trace,
  ) {
    this.rows = rows.map((r) => ({ ...r }));
  }

  /** A row written later. */
  add(row: OutboxRow): void {
    this.rows.push({ ...row });
  }

  /** The row's outbox_events row deleted by hand, its queue entry left: the claim returns it as an orphan. */
  readonly orphaned = new Set<string>();

  async dropOrphans(db: Queryable, seqs: string[]): Promise<number> {
    this.trace.push({ op: 'drop', seqs, db: who(db) });
    const gone = seqs.filter((s) => this.orphaned.has(s));
    this.rows.splice(0, this.rows.length, ...this.rows.filter((r) => !gone.includes(r.seq)));
    return gone.length;
  }

  pending(): number {
    return this.rows.length;
  }

  async claim(db: Queryable, limit: number, exclude: string[] = []): Promise<OutboxRow[]> {
    expect(who(db)).toBe('reader');
    return this.select(limit, exclude);
  }

  async markPublishedAndClaim(
    db: Queryable,
    published: PublishedRows,
    limit: number,
    exclude: string[],
  ): Promise<OutboxRow[]> {
    const claimed = this.select(limit, exclude); // the claim reads the snapshot from before the mark
    await this.markPublished(db, published);
    return claimed;
  }

  async markPublished(db: Queryable, { seqs, kafkaTimestampMs }: PublishedRows): Promise<number> {
    this.kafkaTimestamps.push(kafkaTimestampMs);
    this.trace.push({ op: 'mark', seqs, db: who(db) });
    seqs.forEach((s) => this.published.add(s));
    this.rows.splice(0, this.rows.length, ...this.rows.filter((r) => !this.published.has(r.seq)));
    return seqs.length;
  }

  async park(db: Queryable, seq: string, attempts: number): Promise<void> {
    this.trace.push({ op: 'park', seqs: [seq], db: who(db) });
    this.rows.find((r) => r.seq === seq)!.attempts = attempts; // due again at once: the fake has no clock
  }

  async deadLetter(db: Queryable, entries: DeadLetterEntry[]): Promise<number> {
    this.trace.push({ op: 'dead', seqs: entries.map((e) => e.seq), db: who(db) });
    for (const e of entries) {
      const i = this.rows.findIndex((r) => r.seq === e.seq);
      this.dead.push({ ...e, eventId: this.rows[i].eventId });
      this.deadTickets.set(e.seq, this.rows[i].aggregateId);
      this.rows.splice(i, 1);
    }
    return entries.length;
  }

  private select(limit: number, exclude: string[]): OutboxRow[] {
    return this.rows
      .filter((r) => !exclude.includes(r.seq))
      .sort((a, b) => Number(a.seq) - Number(b.seq))
      .slice(0, limit)
      .map((r) => {
        if (this.orphaned.has(r.seq)) return { seq: r.seq, attempts: r.attempts, orphan: true } as OutboxRow;
        // The ticket's earliest dead letter with a lower seq (the claim's LATERAL join).
        const blocker = this.dead
          .filter((d) => Number(d.seq) < Number(r.seq) && this.deadTickets.get(d.seq) === r.aggregateId)
          .sort((a, b) => Number(a.seq) - Number(b.seq))[0];
        return { ...r, blockedBy: blocker?.eventId ?? null };
      });
  }
}

class FakePublisher implements Publisher {
  readonly maxBatchBytes = 1_000_000;
  readonly sent: Message[][] = [];
  resets = 0;
  /** Transient failures still to come (broker unreachable). */
  failNext = 0;
  /** Tickets whose records the broker refuses (too large). */
  readonly rejectTickets = new Set<string>();

  constructor(private readonly trace: Trace) {}

  /** Failures of the topic set-up still to come (broker down at start-up). */
  failPrepare = 0;

  async prepare(): Promise<void> {
    if (this.failPrepare > 0) {
      this.failPrepare--;
      throw new Error('KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    }
  }

  async send(messages: Message[]): Promise<void> {
    const seqs = messages.map((m) => seqOf(m));
    if (this.failNext > 0) {
      this.failNext--;
      this.trace.push({ op: 'send', seqs: [] });
      throw new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    }
    if (messages.some((m) => this.rejectTickets.has(String(m.key)))) {
      throw Object.assign(
        new Error('The request included a message larger than the max message size the server will accept'),
        { type: 'MESSAGE_TOO_LARGE' },
      );
    }
    this.trace.push({ op: 'send', seqs });
    this.sent.push(messages);
  }

  async reset(): Promise<void> {
    this.resets++;
  }
}

const seqBy = new Map<string, string>();
const seqOf = (m: Message) => seqBy.get(String(m.headers?.['event-id']))!;

function setUp(rows: OutboxRow[], settings: Partial<RelayPipelineDeps['settings']> = {}) {
  rows.forEach((r) => seqBy.set(r.eventId, r.seq));
  const trace: Trace = [];
  const outbox = new FakeOutbox(rows, trace);
  const publisher = new FakePublisher(trace);
  const broker = { failures: 0, oks: 0, failed: () => broker.failures++, ok: () => void broker.oks++ };
  let rounds = 0;
  const pipeline = new RelayPipeline({
    settings: {
      batchSize: 500,
      markFoldMs: 0,
      lingerMs: 0,
      pollIntervalMs: 1,
      maxAttempts: 5,
      retryBaseMs: 10,
      retryMaxMs: 100,
      outageRetryMaxMs: 100,
      cleanupIntervalMs: 60_000,
      queueVacuumRows: 0,
      ...settings,
    },
    repo: outbox,
    publisher,
    reader: () => reader,
    lock: { lost: false, assertHeld: () => undefined },
    sleep: (ms: number, wakeable: boolean) => {
      trace.push({ op: 'sleep', ms, wakeable });
      return new Promise<SleepEnd>((resolve) => setImmediate(() => resolve('elapsed')));
    },
    clearWake: () => undefined,
    // Until the outbox is drained (a guard ends a pipeline that never drains it: the assertions then fail).
    isRunning: () => outbox.pending() > 0 && ++rounds < 200,
    cleanup: () => true,
    vacuumQueue: () => {
      trace.push({ op: 'vacuum' });
      return true;
    },
    metrics: {
      published: { inc: () => undefined },
      sends: { inc: () => undefined },
      deadLettered: { inc: () => undefined },
      failure: () => undefined,
    },
    broker,
    log: createLogger('silent', 'relay-pipeline-spec'),
  });
  return { pipeline, outbox, publisher, trace, broker };
}

const ops = (trace: Trace, op: Trace[number]['op']) => trace.filter((t) => t.op === op);

describe('RelayPipeline', () => {
  it('claims, publishes in seq order, and marks only acknowledged rows, on the lock connection', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const rows = [
      eventRow(1, 'created', a),
      eventRow(2, 'created', b),
      eventRow(3, 'cancelled', a),
      eventRow(4, 'cancelled', b),
    ];
    const { pipeline, outbox, publisher, trace } = setUp(rows);

    await pipeline.lead(writer);

    expect(outbox.pending()).toBe(0);
    expect(publisher.sent.flat().map(seqOf)).toEqual(['1', '2', '3', '4']);
    const marks = ops(trace, 'mark');
    expect(marks.flatMap((m) => m.seqs)).toEqual(['1', '2', '3', '4']);
    expect(marks.every((m) => m.db === 'writer')).toBe(true);
    // Each row is marked only after the send that carried it.
    for (const seq of ['1', '2', '3', '4']) {
      const sentAt = trace.findIndex((t) => t.op === 'send' && t.seqs!.includes(seq));
      const markedAt = trace.findIndex((t) => t.op === 'mark' && t.seqs!.includes(seq));
      expect(sentAt).toBeGreaterThanOrEqual(0);
      expect(markedAt).toBeGreaterThan(sentAt);
    }
    expect(pipeline.publishedCount).toBe(4);
  });

  it('drops, on the lock connection, the queue entries whose outbox rows are gone, and sends the other rows', async () => {
    const t = randomUUID();
    const { pipeline, outbox, publisher, trace } = setUp([
      eventRow(1, 'created', randomUUID()),
      eventRow(2, 'created', t),
      eventRow(3, 'cancelled', t),
    ]);
    outbox.orphaned.add('1');

    await pipeline.lead(writer);

    expect(outbox.pending()).toBe(0);
    expect(publisher.sent.flat().map(seqOf)).toEqual(['2', '3']);
    expect(ops(trace, 'drop')).toEqual([{ op: 'drop', seqs: ['1'], db: 'writer' }]);
    expect(ops(trace, 'dead')).toEqual([]);
    expect(pipeline.publishedCount).toBe(2);
  });

  it('vacuums the queue after every queueVacuumRows marked rows, and never with 0', async () => {
    const rows = (n: number) => Array.from({ length: n }, (_, i) => eventRow(i + 1, 'created', randomUUID()));
    const every = setUp(rows(7), { batchSize: 2, queueVacuumRows: 3 });
    await every.pipeline.lead(writer);
    // Marks of 2, 2, 2 and 1 rows: a vacuum starts once 3 or more rows were marked since the last one (after 4, then 3 more).
    const order = every.trace.filter((t) => t.op === 'mark' || t.op === 'vacuum').map((t) => t.op);
    expect(order).toEqual(['mark', 'mark', 'vacuum', 'mark', 'mark', 'vacuum']);

    const never = setUp(rows(7), { batchSize: 2, queueVacuumRows: 0 });
    await never.pipeline.lead(writer);
    expect(ops(never.trace, 'vacuum')).toEqual([]);
  });

  it("stamps a batch's records once, before the first send, and stores that timestamp with the mark", async () => {
    const t = randomUUID();
    const { pipeline, outbox, publisher } = setUp([eventRow(1, 'created', t), eventRow(2, 'cancelled', t)]);
    publisher.failNext = 2;
    const before = Date.now();
    await pipeline.lead(writer);
    const stamps = publisher.sent.flat().map((m) => Number(m.timestamp));
    expect(stamps[0]).toBeGreaterThanOrEqual(before);
    expect(new Set(stamps).size).toBe(1); // one batch, one timestamp, however many attempts it took
    expect(outbox.kafkaTimestamps).toEqual([stamps[0]]);
  });

  it('marks nothing while the broker fails, backs off between attempts, and resends the same batch', async () => {
    const rows = [eventRow(1, 'created', randomUUID()), eventRow(2, 'created', randomUUID())];
    const { pipeline, publisher, trace } = setUp(rows);
    publisher.failNext = 3;

    await pipeline.lead(writer);

    const firstMark = trace.findIndex((t) => t.op === 'mark');
    const beforeMark = trace.slice(0, firstMark);
    // Three failed sends, each followed by a backoff sleep that no NOTIFY can cut short; then the success.
    expect(beforeMark.map((t) => (t.op === 'sleep' ? `sleep:${t.wakeable}` : t.op))).toEqual([
      'send',
      'sleep:false',
      'send',
      'sleep:false',
      'send',
      'sleep:false',
      'send',
    ]);
    expect(beforeMark.filter((t) => t.op === 'sleep').every((t) => t.ms! <= 100)).toBe(true); // within retryMaxMs
    expect(publisher.sent).toHaveLength(1);
    expect(publisher.sent[0].map(seqOf)).toEqual(['1', '2']);
    expect(ops(trace, 'mark').flatMap((m) => m.seqs)).toEqual(['1', '2']);
    expect(publisher.resets).toBe(0); // a transient failure keeps the idempotent producer
  });

  it('a long outage keeps the retries under outageRetryMaxMs, not retryMaxMs, and reports each attempt to the broker state', async () => {
    const rows = [eventRow(1, 'created', randomUUID())];
    const { pipeline, publisher, trace, broker } = setUp(rows, {
      retryBaseMs: 200,
      retryMaxMs: 30_000,
      outageRetryMaxMs: 1_000,
    });
    publisher.failPrepare = 5; // the broker is down when the relay becomes leader ...
    publisher.failNext = 25; // ... and stays down for a while after the topic set-up

    await pipeline.lead(writer);

    const sleeps = ops(trace, 'sleep').filter((t) => t.wakeable === false);
    expect(sleeps).toHaveLength(30);
    // Without the outage cap, attempts past the 8th draw from [0, 30 s): 22 such draws all under 1 s are (1/30)^22.
    expect(sleeps.every((t) => t.ms! < 1_000)).toBe(true);
    expect(broker.failures).toBe(30);
    expect(broker.oks).toBeGreaterThanOrEqual(2); // the set-up, then the send that got through
    expect(ops(trace, 'mark').flatMap((m) => m.seqs)).toEqual(['1']);
  });

  it("parks a row the broker rejects, dead-letters it after maxAttempts, and its ticket's later rows follow it; other tickets flow", async () => {
    const [rejected, fine] = [randomUUID(), randomUUID()];
    const rows = [
      eventRow(1, 'created', rejected),
      eventRow(2, 'created', fine),
      eventRow(3, 'cancelled', rejected),
      eventRow(4, 'cancelled', fine),
    ];
    const { pipeline, outbox, publisher, trace } = setUp(rows, { maxAttempts: 3 });
    publisher.rejectTickets.add(rejected);

    await pipeline.lead(writer);

    expect(ops(trace, 'park').map((p) => p.seqs![0])).toEqual(['1', '1']); // attempts 1 and 2
    expect(outbox.dead).toEqual([
      {
        seq: '1',
        attempts: 3,
        reason: expect.stringMatching(/^kafka_rejected: MESSAGE_TOO_LARGE/),
        eventId: rows[0].eventId,
      },
      {
        seq: '3',
        attempts: 0,
        reason: `blocked_by_dead_letter:${rows[0].eventId}`,
        blocker: rows[0].eventId,
        eventId: rows[2].eventId,
      },
    ]);
    expect([...ops(trace, 'park'), ...ops(trace, 'dead')].every((t) => t.db === 'writer')).toBe(true);
    // The rejected ticket's cancel never reached the broker; the other ticket's events did, in order.
    expect(publisher.sent.flat().map(seqOf)).toEqual(['2', '4']);
    expect(ops(trace, 'mark').flatMap((m) => m.seqs)).toEqual(['2', '4']);
  });

  it('dead-letters an invalid envelope at once (never sent) and the later rows of its ticket with it', async () => {
    const [poison, fine] = [randomUUID(), randomUUID()];
    const rows = [
      eventRow(1, 'created', poison, false),
      eventRow(2, 'cancelled', poison),
      eventRow(3, 'created', fine),
    ];
    const { pipeline, outbox, publisher } = setUp(rows);

    await pipeline.lead(writer);

    expect(outbox.dead).toEqual([
      {
        seq: '1',
        attempts: 1,
        reason: expect.stringMatching(/^invalid_envelope: data\.priority/),
        eventId: rows[0].eventId,
      },
      {
        seq: '2',
        attempts: 0,
        reason: `blocked_by_dead_letter:${rows[0].eventId}`,
        blocker: rows[0].eventId,
        eventId: rows[1].eventId,
      },
    ]);
    expect(publisher.sent.flat().map(seqOf)).toEqual(['3']);
  });

  it("a dead letter from an earlier round blocks its ticket's rows written later", async () => {
    const ticket = randomUUID();
    const rows = [eventRow(1, 'created', ticket, false)];
    const { pipeline, outbox, publisher } = setUp(rows);
    await pipeline.lead(writer);
    expect(outbox.dead.map((d) => d.seq)).toEqual(['1']);

    // Same fake outbox, a later row of that ticket arrives and a new round claims it.
    const later = eventRow(2, 'cancelled', ticket);
    seqBy.set(later.eventId, later.seq);
    outbox.add(later);
    await pipeline.lead(writer);

    expect(outbox.dead.map((d) => [d.seq, d.reason])).toEqual([
      ['1', expect.stringMatching(/^invalid_envelope/)],
      ['2', `blocked_by_dead_letter:${rows[0].eventId}`],
    ]);
    expect(publisher.sent).toHaveLength(0);
  });
});
