// The fair anchor for the notifier (issue #13): the consumer someone would write by hand with the same
// effect, kafkajs eachBatch + pg, no framework. Per chunk of a partition's batch: JSON + zod parse of
// every message (the shared TicketEvent schema), ONE statement that inserts the inbox rows (ON CONFLICT
// DO NOTHING) and a pending notification (the message text as payload, the target resolved from the
// tenant or the default URL) for each event id really inserted, then resolveOffset and the offset
// commit (last + 1). Binary array parameters and a named statement, as the notifier uses
// (the kit's pg-binary), so what is left between the two is the notifier's own work: the kit's
// envelope checks, repeats folded, ids sorted, dead letters and replay counters in the statement,
// metrics, Nest.
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { Pool } from 'pg';
import { TicketEvent } from '@tickets/contracts';
import { int8Array, textArray, uuidArray } from '@tickets/event-consumer';

/** The application_name of its connections (the bench reads their CPU). */
export const HAND_NOTIFIER_APPLICATION_NAME = 'bench-hand-notifier';

const RECORD_SQL = `
  WITH v AS (
    SELECT * FROM unnest($4::uuid[], $5::text[], $6::uuid[], $7::uuid[], $8::int8[], $9::text[])
      AS x(event_id, event_type, tenant_id, ticket_id, o, payload)
  ),
  ins AS (
    INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset")
    SELECT $1, event_id, event_type, ticket_id, $2, $3, o FROM v
    ON CONFLICT (event_id, group_id) DO NOTHING
    RETURNING event_id
  )
  INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, next_attempt_at, payload)
  SELECT $1, v.tenant_id, v.event_id, v.ticket_id, v.event_type, COALESCE(t.webhook_url, $10::text),
         CASE WHEN t.webhook_url IS NOT NULL THEN 'tenant' ELSE 'default' END, 'pending', now(), v.payload
  FROM v JOIN ins ON ins.event_id = v.event_id LEFT JOIN tenants t ON t.id = v.tenant_id`;

export interface HandNotifierOptions {
  brokers: string[];
  databaseUrl: string;
  topic: string;
  groupId: string;
  chunkSize: number;
  partitionsConcurrency: number;
  webhookUrl: string;
  /** Called after each chunk's statement with the number of messages it covered. */
  onChunk: (messages: number) => void;
}

/** Starts the hand-written notifier; the returned function stops it (leaves the group, closes the pool). */
export async function startHandNotifier(o: HandNotifierOptions): Promise<() => Promise<void>> {
  const pool = new Pool({
    connectionString: o.databaseUrl,
    max: o.partitionsConcurrency,
    application_name: HAND_NOTIFIER_APPLICATION_NAME,
  });
  const kafka = new Kafka({ brokers: o.brokers, clientId: 'bench-hand-notifier', logLevel: logLevel.NOTHING });
  const consumer: Consumer = kafka.consumer({ groupId: o.groupId, maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: o.topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: o.partitionsConcurrency,
    eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat, isRunning, isStale }) => {
      for (let i = 0; i < batch.messages.length; i += o.chunkSize) {
        if (!isRunning() || isStale()) return;
        const chunk = batch.messages.slice(i, i + o.chunkSize);
        const texts = chunk.map((m) => m.value!.toString('utf8'));
        const events = texts.map((t) => TicketEvent.parse(JSON.parse(t)));
        await pool.query({
          name: 'hand-notifier-record',
          text: RECORD_SQL,
          values: [
            o.groupId,
            batch.topic,
            batch.partition,
            uuidArray(events.map((e) => e.id)),
            textArray(events.map((e) => e.type)),
            uuidArray(events.map((e) => e.tenantId)),
            uuidArray(events.map((e) => e.ticketId)),
            int8Array(chunk.map((m) => m.offset)),
            textArray(texts),
            o.webhookUrl,
          ],
        });
        o.onChunk(chunk.length);
        const last = chunk[chunk.length - 1].offset;
        resolveOffset(last);
        await commitOffsetsIfNecessary({
          topics: [
            {
              topic: batch.topic,
              partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }],
            },
          ],
        });
        await heartbeat();
      }
    },
  });
  return async () => {
    await consumer.disconnect();
    await pool.end();
  };
}
