import { Injectable } from '@nestjs/common';
import { Prisma } from '@tickets/db';
import { Database } from '../infra/database';

export interface OutboxOverview {
  pending: number;
  /** Age of the oldest unpublished row (the outbox lag), 0 when none. */
  oldestPendingAgeMs: number;
  deadLetters: number;
  /** Rows published per minute over the last hour, oldest first (60 entries; minutes with none are 0). */
  publishedPerMinute: Array<{ minute: Date; count: number }>;
}

export interface DeadLetterCounts {
  outbox: number;
  consumer: number;
  /** Dead notifications of the notifier's group (its index serves the count). */
  notification: number;
}

export interface NotificationOverview {
  pending: number;
  /** Age of the oldest pending notification that is due, 0 when none. */
  oldestDueAgeMs: number;
}

export interface ReconcileRunRow {
  id: string;
  trigger: string;
  startedAt: Date;
  finishedAt: Date;
  ticketsChecked: number;
  duplicateTickets: number;
  findings: Array<{ check: string; count: number; sample: string[]; advice: string }>;
}

/** The console's overview reads (read-only, each a single statement outside any transaction). */
@Injectable()
export class ConsoleRepository {
  constructor(private readonly db: Database) {}

  async outbox(): Promise<OutboxOverview> {
    const [counts] = await this.db.prisma.$queryRaw<
      Array<{ pending: number; age: number | null; dead: number }>
    >(Prisma.sql`
      SELECT (SELECT count(*) FROM outbox_pending)::int AS pending,
             (SELECT floor(extract(epoch FROM now() - o.created_at) * 1000)::float8
                FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq ORDER BY p.seq LIMIT 1) AS age,
             (SELECT count(*) FROM outbox_dead_letters)::int AS dead`);
    const perMinute = await this.db.prisma.$queryRaw<Array<{ minute: Date; count: number }>>(Prisma.sql`
      SELECT m.minute, coalesce(sum(p.rows), 0)::int AS count
        FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()), interval '1 minute') AS m(minute)
        LEFT JOIN outbox_publications p
          ON p.published_at >= m.minute AND p.published_at < m.minute + interval '1 minute'
       GROUP BY m.minute ORDER BY m.minute`);
    return {
      pending: counts.pending,
      oldestPendingAgeMs: Math.max(0, counts.age ?? 0),
      deadLetters: counts.dead,
      publishedPerMinute: perMinute,
    };
  }

  async deadLetterCounts(notifierGroup: string): Promise<DeadLetterCounts> {
    const [r] = await this.db.prisma.$queryRaw<DeadLetterCounts[]>(Prisma.sql`
      SELECT (SELECT count(*) FROM outbox_dead_letters)::int AS outbox,
             (SELECT count(*) FROM ticket_events.consumer_dead_letters WHERE resolution IS NULL)::int AS consumer,
             (SELECT count(*) FROM notifications WHERE group_id = ${notifierGroup} AND status = 'dead')::int AS notification`);
    return r;
  }

  /** Pending deliveries of one consumer group and how late the oldest due one is (both served by its (group, status) index). */
  async notifications(groupId: string): Promise<NotificationOverview> {
    const [r] = await this.db.prisma.$queryRaw<Array<{ pending: number; age: number | null }>>(Prisma.sql`
      SELECT (SELECT count(*) FROM notifications WHERE group_id = ${groupId} AND status = 'pending')::int AS pending,
             (SELECT floor(extract(epoch FROM now() - min(next_attempt_at)) * 1000)::float8
                FROM notifications WHERE group_id = ${groupId} AND status = 'pending' AND next_attempt_at <= now()) AS age`);
    return { pending: r.pending, oldestDueAgeMs: Math.max(0, r.age ?? 0) };
  }

  /** The newest reconciliation run (scheduled or by hand), or null when none has run. */
  async latestReconcileRun(): Promise<ReconcileRunRow | null> {
    const rows = await this.db.prisma.$queryRaw<ReconcileRunRow[]>(Prisma.sql`
      SELECT id::text, trigger, started_at AS "startedAt", finished_at AS "finishedAt", tickets_checked AS "ticketsChecked",
             duplicate_tickets AS "duplicateTickets", findings
        FROM reconcile_runs ORDER BY finished_at DESC, id DESC LIMIT 1`);
    return rows[0] ?? null;
  }
}
