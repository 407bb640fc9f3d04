import { Prisma, type PrismaClient } from '@tickets/db';
import { flag } from './flags';

/**
 * The reconciliation job: checks tickets, idempotency keys, the outbox and notifications against each
 * other and lists every disagreement with what to do about it. Read-only. Exit code 1 when it finds any.
 *
 * Windows: outbox rows are deleted OUTBOX_RETENTION after publishing and inbox rows after INBOX_RETENTION,
 * so "an event is missing" is only checked for tickets younger than `--since` (default 24 h), and "not
 * consumed yet" only for events published more than `--grace` (default 5 min) ago.
 */
export interface Finding {
  check: string;
  count: number;
  sample: string[];
  advice: string;
}

interface Check {
  name: string;
  advice: string;
  sql: (p: { since: Date; grace: Date; group: string; tenant: string | null }) => Prisma.Sql;
}

const tenantFilter = (col: string, tenant: string | null) =>
  tenant ? Prisma.sql`AND ${Prisma.raw(col)} = (SELECT id FROM tenants WHERE slug = ${tenant})` : Prisma.empty;

const CHECKS: Check[] = [
  {
    name: 'ticket without its ticket.created.v1 event',
    advice: 'The create transaction writes both; this means rows were deleted by hand. Re-enqueue the event or investigate.',
    sql: ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.created_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.created.v1')
        AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.aggregate_id = t.id AND d.event_type = 'ticket.created.v1')
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.created.v1')`,
  },
  {
    name: 'cancelled ticket without its ticket.cancelled.v1 event',
    advice: 'The cancel transaction writes both; investigate manual changes.',
    sql: ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.status = 'cancelled' AND t.cancelled_at >= ${since}::timestamptz ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters d WHERE d.aggregate_id = t.id AND d.event_type = 'ticket.cancelled.v1')
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.ticket_id = t.id AND i.event_type = 'ticket.cancelled.v1')`,
  },
  {
    name: 'idempotency key pointing at a missing ticket',
    advice: 'A key must resolve to the ticket it made; the ticket was deleted by hand. Delete the key or restore the ticket.',
    sql: ({ tenant }) => Prisma.sql`
      SELECT k.tenant_id::text || '/' || k.key AS id FROM idempotency_keys k
      WHERE NOT EXISTS (SELECT 1 FROM tickets t WHERE t.id = k.ticket_id) ${tenantFilter('k.tenant_id', tenant)}`,
  },
  {
    name: 'ticket created through the API without its idempotency key (within the key retention)',
    advice: 'Only a purge past IDEMPOTENCY_KEY_RETENTION removes keys; a younger ticket without one means manual deletion.',
    sql: ({ since, tenant }) => Prisma.sql`
      SELECT t.id::text AS id FROM tickets t
      WHERE t.created_at >= ${since}::timestamptz AND t.idempotency_key IS NOT NULL ${tenantFilter('t.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = t.tenant_id AND k.key = t.idempotency_key)`,
  },
  {
    name: 'outbox event unpublished for longer than the grace period',
    advice: 'Is a relay running (RELAY_ENABLED=true in the API, or npm run start:relay)? Is Kafka reachable? See outbox lag in /metrics.',
    sql: ({ grace, tenant }) => Prisma.sql`
      SELECT o.event_id::text AS id FROM outbox_events o
      WHERE o.published_at IS NULL AND o.created_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}`,
  },
  {
    name: 'outbox event dead-lettered',
    advice: 'The broker rejected it or it failed validation; read outbox_dead_letters.reason, fix, and re-enqueue by hand.',
    sql: ({ since, tenant }) => Prisma.sql`
      SELECT d.event_id::text AS id FROM outbox_dead_letters d WHERE d.created_at >= ${since}::timestamptz ${tenantFilter('d.tenant_id', tenant)}`,
  },
  {
    name: 'published event not consumed by the notifier group',
    advice: 'Is the consumer running (npm run start:consumer)? Check its lag; a replay (npm run replay) is safe.',
    sql: ({ grace, group, tenant }) => Prisma.sql`
      SELECT o.event_id::text AS id FROM outbox_events o
      WHERE o.published_at IS NOT NULL AND o.published_at < ${grace}::timestamptz ${tenantFilter('o.tenant_id', tenant)}
        AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.group_id = ${group} AND i.event_id = o.event_id)
        AND NOT EXISTS (SELECT 1 FROM consumer_dead_letters c WHERE c.group_id = ${group} AND c.key = o.aggregate_id::text)`,
  },
  {
    name: 'consumed event without a notification',
    advice: 'The inbox row and the notification are written in one transaction; investigate manual deletes.',
    sql: ({ since, group, tenant }) => Prisma.sql`
      SELECT i.event_id::text AS id FROM inbox_events i
      WHERE i.group_id = ${group} AND i.received_at >= ${since}::timestamptz
        AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = i.event_id AND n.group_id = i.group_id)
        ${tenant ? Prisma.sql`AND i.ticket_id IN (SELECT id FROM tickets WHERE tenant_id = (SELECT id FROM tenants WHERE slug = ${tenant}))` : Prisma.empty}`,
  },
  {
    name: 'notification dead (gave up)',
    advice: 'The webhook kept failing; see notification_attempts for the errors, fix the receiver, then requeue it.',
    sql: ({ since, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'dead' AND n.created_at >= ${since}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
  },
  {
    name: 'notification pending for longer than the grace period',
    advice: 'The dispatcher is behind or the receiver keeps failing; see notification_attempts.',
    sql: ({ grace, group, tenant }) => Prisma.sql`
      SELECT n.id::text AS id FROM notifications n
      WHERE n.group_id = ${group} AND n.status = 'pending' AND n.created_at < ${grace}::timestamptz ${tenantFilter('n.tenant_id', tenant)}`,
  },
];

export async function reconcile(
  prisma: PrismaClient,
  opts: { since: Date; grace: Date; group: string; tenant: string | null; onProgress?: (done: number, total: number, name: string) => void },
): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const [i, check] of CHECKS.entries()) {
    opts.onProgress?.(i, CHECKS.length, check.name);
    const rows = await prisma.$queryRaw<Array<{ id: string }>>(Prisma.sql`SELECT id FROM (${check.sql(opts)}) AS x LIMIT 100001`);
    if (rows.length) findings.push({ check: check.name, count: rows.length, sample: rows.slice(0, 5).map((r) => r.id), advice: check.advice });
  }
  opts.onProgress?.(CHECKS.length, CHECKS.length, 'done');
  return findings;
}

const HOURS = /^(\d+)([mhd])$/;
function ago(text: string, what: string): Date {
  const m = HOURS.exec(text);
  if (!m) throw new Error(`--${what} takes a duration like 30m, 24h or 7d, not "${text}"`);
  const ms = Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd'];
  return new Date(Date.now() - ms);
}

export const RECONCILE_USAGE = `  reconcile [--since 24h] [--grace 5m] [--group ticket-notifier] [--tenant <slug>] [--json]
                                             check tickets, keys, outbox and notifications against each other`;

export async function reconcileCommand(argv: string[], deps: { prisma: PrismaClient; out: (line: string) => void; defaultGroup: string }): Promise<number> {
  const findings = await reconcile(deps.prisma, {
    since: ago(flag(argv, 'since') ?? '24h', 'since'),
    grace: ago(flag(argv, 'grace') ?? '5m', 'grace'),
    group: flag(argv, 'group') ?? deps.defaultGroup,
    tenant: flag(argv, 'tenant') ?? null,
    onProgress: (done, total, name) => process.stderr.write(`reconcile: [${done}/${total}] ${name}\n`),
  });
  if (argv.includes('--json')) deps.out(JSON.stringify({ ok: findings.length === 0, findings }));
  else if (!findings.length) deps.out('reconcile: everything agrees (tickets, keys, outbox, inbox, notifications)');
  else for (const f of findings) deps.out(`${f.count} × ${f.check}\n    e.g. ${f.sample.join(', ')}\n    what to do: ${f.advice}`);
  return findings.length ? 1 : 0;
}
