// The chaos run's invariants: what the database, the topic and the webhook receiver say after the
// storm, checked against each other.
import { Kafka, logLevel } from 'kafkajs';
import type { Pool } from 'pg';
import type { Delivery } from './webhook-recorder';

export interface Observed {
  intents: number;
  tickets: number;
  duplicateTickets: number;
  cancelledTickets: number;
  /** Outbox rows of the run's tenant: ticket.created.v1 + ticket.cancelled.v1. */
  eventsWritten: number;
  eventIdsWritten: Set<string>;
  /** Messages of the tenant in the topic (a relay retry may publish one twice) and distinct event ids. */
  topicMessages: number;
  topicEventIds: Set<string>;
  /** Tickets whose cancelled event precedes its created event in partition order. */
  outOfOrderTickets: number;
  uniqueNotified: number;
  notifiedUnderTwoIds: number;
  redeliveriesSameId: number;
  lostEvents: number;
  unexpectedNotified: number;
  /** Notifications of the tenant not yet recorded as delivered (or dead): a delivery whose result could not
   * be written (e.g. during the PostgreSQL restart) stays pending until its lease ends and is sent again. */
  notificationsUnsettled: number;
}

export async function readDatabase(
  db: Pool,
  tenantId: string,
): Promise<
  Pick<
    Observed,
    'tickets' | 'duplicateTickets' | 'cancelledTickets' | 'eventsWritten' | 'eventIdsWritten' | 'notificationsUnsettled'
  >
> {
  const t = await db.query<{ tickets: number; cancelled: number; dups: number }>(
    `SELECT count(*)::int AS tickets, count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
            (SELECT coalesce(sum(n - 1), 0)::int FROM (SELECT count(*) AS n FROM tickets WHERE tenant_id = $1 GROUP BY title) d) AS dups
       FROM tickets WHERE tenant_id = $1`,
    [tenantId],
  );
  const e = await db.query<{ event_id: string }>(`SELECT event_id::text FROM outbox_events WHERE tenant_id = $1`, [
    tenantId,
  ]);
  const n = await db.query<{ unsettled: number }>(
    `SELECT count(*)::int AS unsettled FROM notifications WHERE tenant_id = $1 AND status = 'pending'`,
    [tenantId],
  );
  return {
    notificationsUnsettled: n.rows[0].unsettled,
    tickets: t.rows[0].tickets,
    cancelledTickets: t.rows[0].cancelled,
    duplicateTickets: t.rows[0].dups,
    eventsWritten: e.rowCount ?? 0,
    eventIdsWritten: new Set(e.rows.map((r) => r.event_id)),
  };
}

/** Reads the whole topic (up to the high watermarks of now) with a throwaway consumer group. */
export async function readTopic(
  brokers: string[],
  topic: string,
  tenantId: string,
): Promise<Pick<Observed, 'topicMessages' | 'topicEventIds' | 'outOfOrderTickets'>> {
  const kafka = new Kafka({ clientId: 'chaos-topic-reader', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const remaining = new Map(
    offsets.filter((o) => Number(o.high) > Number(o.low)).map((o) => [o.partition, Number(o.high)]),
  );
  const ids = new Set<string>();
  let messages = 0;
  const firstSeen = new Map<string, string>(); // ticketId -> first event type seen in partition order
  let outOfOrder = 0;
  if (remaining.size) {
    const consumer = kafka.consumer({ groupId: `chaos-reader-${Date.now()}`, maxWaitTimeInMs: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            const e = JSON.parse(String(message.value)) as {
              id: string;
              type: string;
              tenantId: string;
              ticketId: string;
            };
            if (e.tenantId === tenantId) {
              messages++;
              ids.add(e.id);
              const first = firstSeen.get(e.ticketId);
              if (first === undefined) {
                firstSeen.set(e.ticketId, e.type);
                if (e.type !== 'ticket.created.v1') outOfOrder++;
              }
            }
            if (Number(message.offset) + 1 >= (remaining.get(partition) ?? 0)) remaining.delete(partition);
            if (remaining.size === 0) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
  }
  return { topicMessages: messages, topicEventIds: ids, outOfOrderTickets: outOfOrder };
}

export function readDeliveries(
  deliveries: Delivery[],
  written: Set<string>,
): Pick<
  Observed,
  'uniqueNotified' | 'notifiedUnderTwoIds' | 'redeliveriesSameId' | 'lostEvents' | 'unexpectedNotified'
> {
  const idsByEvent = new Map<string, Set<string>>();
  const seenWebhookIds = new Set<string>();
  let redeliveries = 0;
  for (const d of deliveries) {
    if (seenWebhookIds.has(d.webhookId)) redeliveries++;
    seenWebhookIds.add(d.webhookId);
    const s = idsByEvent.get(d.eventId) ?? new Set<string>();
    s.add(d.webhookId);
    idsByEvent.set(d.eventId, s);
  }
  let lost = 0;
  for (const id of written) if (!idsByEvent.has(id)) lost++;
  let unexpected = 0;
  for (const id of idsByEvent.keys()) if (!written.has(id)) unexpected++;
  return {
    uniqueNotified: idsByEvent.size,
    notifiedUnderTwoIds: [...idsByEvent.values()].filter((s) => s.size > 1).length,
    redeliveriesSameId: redeliveries,
    lostEvents: lost,
    unexpectedNotified: unexpected,
  };
}

export interface Row {
  name: string;
  value: string;
  ok: boolean | null; // null: informational
}

export function invariantRows(o: Observed): Row[] {
  const expectedEvents = o.tickets + o.cancelledTickets;
  return [
    { name: 'intents', value: String(o.intents), ok: null },
    { name: 'tickets (= intents)', value: String(o.tickets), ok: o.tickets === o.intents },
    { name: 'duplicate tickets (0)', value: String(o.duplicateTickets), ok: o.duplicateTickets === 0 },
    { name: 'cancelled tickets', value: String(o.cancelledTickets), ok: null },
    {
      name: 'events written (= tickets + cancelled)',
      value: String(o.eventsWritten),
      ok: o.eventsWritten === expectedEvents,
    },
    {
      name: 'events in topic: messages / distinct',
      value: `${o.topicMessages} / ${o.topicEventIds.size}`,
      ok: o.topicEventIds.size === o.eventsWritten,
    },
    {
      name: 'unique events notified (= written)',
      value: String(o.uniqueNotified),
      ok: o.uniqueNotified === o.eventsWritten && o.unexpectedNotified === 0,
    },
    {
      name: 'events notified under two webhook-ids (0)',
      value: String(o.notifiedUnderTwoIds),
      ok: o.notifiedUnderTwoIds === 0,
    },
    { name: 'webhook redeliveries of the same webhook-id', value: String(o.redeliveriesSameId), ok: null },
    { name: 'lost events (0)', value: String(o.lostEvents), ok: o.lostEvents === 0 },
    {
      name: 'tickets cancelled-before-created in topic (0)',
      value: String(o.outOfOrderTickets),
      ok: o.outOfOrderTickets === 0,
    },
  ];
}

/** Every invariant that the database and the receiver alone can settle holds (the topic is read once at the end). */
export function converged(
  o: Pick<
    Observed,
    | 'intents'
    | 'tickets'
    | 'cancelledTickets'
    | 'eventsWritten'
    | 'uniqueNotified'
    | 'lostEvents'
    | 'notificationsUnsettled'
  >,
): boolean {
  return (
    o.tickets >= o.intents &&
    o.eventsWritten === o.tickets + o.cancelledTickets &&
    o.lostEvents === 0 &&
    o.uniqueNotified === o.eventsWritten &&
    o.notificationsUnsettled === 0
  );
}

export function formatTable(rows: Row[]): string {
  const w = Math.max(...rows.map((r) => r.name.length));
  const v = Math.max(...rows.map((r) => r.value.length));
  return rows
    .map((r) => `  ${r.name.padEnd(w)}  ${r.value.padStart(v)}  ${r.ok === null ? '' : r.ok ? 'ok' : 'BROKEN'}`)
    .join('\n');
}
