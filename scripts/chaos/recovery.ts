// The chaos run's recovery timeline: when each stage of the event path (relay ack → consumer → webhook)
// moved again after a broker fault, and whether that meets the recovery goals. Read after the run from
// the database (outbox_publications.published_at, the kit's inbox_events.received_at) and the webhook
// receiver, so nothing in the apps is instrumented for it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { Pool } from 'pg';

/** Times (ms epoch, ascending) at which each stage handled an event of the run's tenant. */
export interface StageTimes {
  /** The relay marked a row published (after the broker's ack; the mark can trail the ack by a fold of up to markFoldMs). */
  relayAck: number[];
  /** The consumer recorded an event in its inbox (transaction start of the chunk that read it). */
  consumed: number[];
  /** The webhook receiver got a delivery. */
  webhook: number[];
}

export async function readStageTimes(db: Pool, tenantId: string, webhooks: number[]): Promise<StageTimes> {
  const ms = async (sql: string): Promise<number[]> =>
    (await db.query<{ at: string }>(sql, [tenantId]).catch(() => ({ rows: [] as Array<{ at: string }> }))).rows.map(
      (r) => Number(r.at),
    );
  const relayAck = await ms(
    `SELECT (extract(epoch FROM p.published_at) * 1000)::bigint::text AS at
       FROM outbox_publications p CROSS JOIN LATERAL unnest(p.seqs) AS s(seq) JOIN outbox_events o ON o.seq = s.seq
      WHERE o.tenant_id = $1 ORDER BY p.published_at`,
  );
  const consumed = await ms(
    `SELECT (extract(epoch FROM i.received_at) * 1000)::bigint::text AS at
       FROM ticket_events.inbox_events i JOIN outbox_events o ON o.event_id = i.event_id
      WHERE o.tenant_id = $1 ORDER BY i.received_at`,
  );
  return { relayAck, consumed, webhook: [...webhooks].sort((a, b) => a - b) };
}

/** The longest pause between two consecutive times from `from` on (the first one counted from `from`), and when it ended. */
export function longestGap(times: number[], from: number, until = Infinity): { gapMs: number; endsAt?: number } {
  let prev = from;
  let best: { gapMs: number; endsAt?: number } = { gapMs: 0 };
  for (const at of times) {
    if (at < from || at > until) continue;
    if (at - prev > best.gapMs) best = { gapMs: at - prev, endsAt: at };
    prev = at;
  }
  return best;
}

export const firstAt = (times: number[], from: number): number | undefined => times.find((t) => t >= from);

export const secs = (ms: number | undefined): string => (ms === undefined ? 'none' : `${(ms / 1000).toFixed(1)} s`);

/** The cluster's broker.session.timeout.ms (Kafka's default 9000 when the node's config does not set it). */
export function brokerSessionTimeoutMs(clusterDir: string): number {
  try {
    const props = readFileSync(join(clusterDir, 'node-1', 'config', 'server.properties'), 'utf8');
    const m = /^broker\.session\.timeout\.ms=(\d+)/m.exec(props);
    return m ? Number(m[1]) : 9_000;
  } catch {
    return 9_000;
  }
}

/**
 * Resolves to the first moment the cluster serves `topic` again: a metadata answer in which every
 * partition's leader is a live (listed, so unfenced) broker and at least `minIsr` of its in-sync replicas
 * are live, so an acks=all write can succeed. (Right after a restart of every node, the first node up
 * still reports the leaders of before the kill.) Polls every 100 ms with a fresh client (no retries of
 * its own) until `boundMs`; rejects after that.
 */
export async function waitUntilServing(
  brokers: string[],
  topic: string,
  minIsr: number,
  boundMs: number,
): Promise<number> {
  const deadline = Date.now() + boundMs;
  const kafka = new Kafka({
    clientId: 'chaos-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 500,
    requestTimeout: 1_000,
    retry: { retries: 0 },
  });
  while (Date.now() < deadline) {
    const admin = kafka.admin({ retry: { retries: 0 } });
    const at = await admin
      .connect()
      .then(async () => {
        const live = new Set((await admin.describeCluster()).brokers.map((b) => b.nodeId));
        const parts = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? [];
        const serving = (p: (typeof parts)[number]) =>
          live.has(p.leader) && p.isr.filter((r) => live.has(r)).length >= minIsr;
        return parts.length > 0 && parts.every(serving) ? Date.now() : undefined;
      })
      .catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    if (at !== undefined) return at;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the cluster did not serve ${topic} within ${boundMs} ms`);
}
