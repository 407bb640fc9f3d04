import type { ConsoleSession } from './console-sessions';
import { html, type SafeHtml } from './html';
import { fmtMs, fmtTime, page, postForm } from './layout.views';
import { waterfall } from './svg-chart';
import type { TicketRow, TicketTimelineRows } from './ticket-timeline.repository';

interface Step {
  at: Date;
  what: SafeHtml;
  cls?: 'good' | 'fail';
}

const traceIdOf = (traceparent: string | null) =>
  /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1] ?? null;

/** Every recorded moment of the ticket, in time order: the request, each event's way, each delivery attempt, each operator action. */
function steps(t: TicketTimelineRows, retentionNote: string): Step[] {
  const s: Step[] = [
    {
      at: t.ticket.createdAt,
      what: html`ticket created (${t.ticket.status === 'cancelled' ? 'later cancelled' : t.ticket.status})`,
    },
  ];
  for (const k of t.keys)
    s.push({
      at: k.createdAt,
      what: html`idempotency key <code>${k.key}</code> stored (${k.operation}, ${k.outcome}, HTTP ${k.responseStatus})`,
    });
  for (const o of t.outbox) {
    s.push({
      at: o.createdAt,
      what: html`outbox row seq ${o.seq}: <code>${o.eventType}</code> event <code>${o.eventId}</code>`,
    });
    // The record's own timestamp is when it went to Kafka; published_at is the mark, written after the
    // broker's ack, so a fast consumer records the event before it (docs/operating.md, "Timeline").
    if (o.kafkaTimestamp)
      s.push({
        at: o.kafkaTimestamp,
        what: html`published to Kafka: <code>${o.eventType}</code> (the record's timestamp)`,
        cls: 'good',
      });
    if (o.publishedAt)
      s.push({
        at: o.publishedAt,
        what: o.kafkaTimestamp
          ? html`outbox row seq ${o.seq} marked published after the broker's ack`
          : html`published to Kafka: <code>${o.eventType}</code> (the time of the mark, after the broker's ack)`,
        cls: o.kafkaTimestamp ? undefined : 'good',
      });
    else if (!o.dead && o.attempts > 0)
      s.push({
        at: o.createdAt,
        what: html`<span class="warn">not published yet: the broker rejected it ${o.attempts} time(s), the relay retries it (${o.lastError ?? ''})</span>`,
      });
    if (o.dead) s.push({ at: o.deadAt!, what: html`dead-lettered by the relay: ${o.lastError}`, cls: 'fail' });
  }
  if (!t.outbox.length)
    s.push({ at: t.ticket.createdAt, what: html`<span class="warn">no outbox row: ${retentionNote}</span>` });
  for (const i of t.inbox) {
    const dup = i.duplicates ? html`, ${i.duplicates} redelivery(ies) skipped` : html``;
    s.push({
      at: i.receivedAt,
      what: html`consumed by group <code>${i.groupId}</code>: <code>${i.eventType}</code> at ${i.topic}[${i.partition}]@${i.offset}${dup}`,
      cls: 'good',
    });
  }
  for (const n of t.notifications) {
    s.push({
      at: n.createdAt,
      what: html`notification <code>${n.id}</code> (${n.groupId}) to ${n.targetUrl ?? '(no webhook target: skipped)'}`,
    });
    for (const a of n.attemptLog) {
      const ok = a.statusCode !== null && a.statusCode >= 200 && a.statusCode < 300;
      s.push({
        at: new Date(a.at),
        what: html`webhook attempt ${a.attemptNo}: ${a.statusCode ?? 'no response'}${a.error ? html` (${a.error})` : html``}, ${a.durationMs} ms`,
        cls: ok ? 'good' : 'fail',
      });
    }
  }
  for (const a of t.actions)
    s.push({
      at: a.at,
      what: html`${a.action} of ${a.kind} <code>${a.targetId}</code> by ${a.actor}${a.note ? html` (${a.note})` : html``}`,
    });
  return s.sort((a, b) => new Date(a.at).getTime() - new Date(b.at).getTime());
}

const STAGES = { outbox: '#8c959f', kafka: '#0969da', webhook: '#1a7f37' };

/** Per event: outbox to Kafka (relay), Kafka to the first consumer's inbox, inbox to the first 2xx webhook. */
function eventWaterfall(t: TicketTimelineRows): SafeHtml {
  const t0 = new Date(t.ticket.createdAt).getTime();
  const ms = (d: Date | string) => new Date(d).getTime() - t0;
  const rows = t.outbox
    .filter((o) => o.publishedAt)
    .map((o) => {
      const read = t.inbox
        .filter((i) => i.eventId === o.eventId)
        .sort((a, b) => ms(a.receivedAt) - ms(b.receivedAt))[0];
      // The record's timestamp; for rows without it, the mark (published_at), which follows the ack:
      // an event already consumed was published by then.
      const marked = ms(o.kafkaTimestamp ?? o.publishedAt!);
      const published = read ? Math.min(marked, ms(read.receivedAt)) : marked;
      const spans = [{ name: 'outbox → published', fromMs: ms(o.createdAt), toMs: published, color: STAGES.outbox }];
      if (read)
        spans.push({ name: 'published → consumed', fromMs: published, toMs: ms(read.receivedAt), color: STAGES.kafka });
      const ok = t.notifications
        .filter((n) => n.eventId === o.eventId)
        .flatMap((n) => n.attemptLog.filter((a) => a.statusCode !== null && a.statusCode >= 200 && a.statusCode < 300))
        .sort((a, b) => ms(a.at) - ms(b.at))[0];
      if (read && ok)
        spans.push({
          name: 'consumed → webhook delivered',
          fromMs: ms(read.receivedAt),
          toMs: ms(ok.at),
          color: STAGES.webhook,
        });
      return { label: o.eventType, spans };
    });
  return rows.length ? waterfall({ title: 'Where the time went, per event', rows }) : html``;
}

function notificationsTable(t: TicketTimelineRows, session: ConsoleSession): SafeHtml {
  if (!t.notifications.length)
    return html`<p class="muted">No notification yet (the event was not consumed, or no consumer group has it).</p>`;
  return html`<table><tr><th>notification (webhook-id)</th><th>group</th><th>event</th><th>status</th><th>attempts</th><th>last error</th><th></th></tr>${t.notifications.map(
    (
      n,
    ) => html`<tr><td class="mono">${n.id}</td><td>${n.groupId}</td><td>${n.eventType}</td><td class="${n.status === 'delivered' ? 'ok' : n.status === 'dead' ? 'bad' : ''}">${n.status}</td><td>${n.attempts}</td><td>${n.lastError ?? ''}</td>
<td>${n.status === 'dead' ? postForm('/dead-letters/requeue', session, { kind: 'notification', id: n.id, back: ticketHref(t.ticket) }, 'Requeue') : html``}</td></tr>`,
  )}</table>`;
}

export function timelinePage(t: TicketTimelineRows, session: ConsoleSession, retentionNote: string): string {
  const trace = t.outbox.map((o) => traceIdOf(o.traceparent)).find((x) => x) ?? null;
  const first = new Date(t.ticket.createdAt).getTime();
  const kafka = t.inbox.length
    ? html`<table><tr><th>group</th><th>event</th><th>topic</th><th>partition</th><th>offset</th><th>received</th></tr>${t.inbox.map(
        (i) =>
          html`<tr><td>${i.groupId}</td><td class="mono">${i.eventId}</td><td>${i.topic}</td><td>${i.partition}</td><td>${i.offset}</td><td>${fmtTime(i.receivedAt)}</td></tr>`,
      )}</table>`
    : html`<p class="muted">No consumer group has recorded an event of this ticket (not published yet, or the consumer is behind: see the consumer lag).</p>`;
  return page(
    `Ticket ${t.ticket.id}`,
    session,
    html`<section><table>
<tr><th>tenant</th><td>${t.ticket.tenant}</td><th>status</th><td>${t.ticket.status}</td></tr>
<tr><th>title</th><td colspan="3">${t.ticket.title}</td></tr>
<tr><th>idempotency key</th><td class="mono">${t.ticket.idempotencyKey ?? '-'}</td><th>externalRef</th><td class="mono">${t.ticket.externalRef ?? '-'}</td></tr>
<tr><th>trace id</th><td class="mono" id="trace-id">${trace ?? '(not known: the outbox row is gone)'}</td><th>created</th><td>${fmtTime(t.ticket.createdAt)}</td></tr>
</table></section>
<section id="timeline"><h2>Timeline</h2>${eventWaterfall(t)}<ol class="timeline">${steps(t, retentionNote).map(
      (s) =>
        html`<li class="${s.cls ?? ''}"><span class="muted">${fmtTime(s.at)} (+${fmtMs(new Date(s.at).getTime() - first)})</span><br>${s.what}</li>`,
    )}</ol></section>
<section id="kafka"><h2>Kafka (as recorded by the consumers' inbox)</h2>${kafka}</section>
<section id="notifications"><h2>Webhook notifications</h2>${notificationsTable(t, session)}</section>`,
  );
}

/** The link that opens exactly this ticket: by its id and its tenant (a lookup by `q` may name tickets of several tenants). */
export const ticketHref = (t: { id: string; tenant: string | null }) =>
  `/tickets?${new URLSearchParams({ id: t.id, ...(t.tenant ? { tenant: t.tenant } : {}) }).toString()}`;

export function lookupPage(q: string, found: TicketRow[], session: ConsoleSession, tenant?: string): string {
  const form = html`<section><form method="get" action="/tickets"><label>Ticket id, idempotency key, externalRef, event id or notification id <input type="search" name="q" value="${q}" required></label> <label>tenant <input type="text" name="tenant" value="${tenant ?? ''}" placeholder="every tenant"></label> <button type="submit">Look up</button></form></section>`;
  const where = tenant ? html` of tenant <code>${tenant}</code>` : html``;
  const result = !q
    ? html``
    : found.length
      ? html`<section><p>${found.length} tickets${where} match <code>${q}</code> (idempotency keys and externalRefs are per tenant): pick one, or a tenant.</p><table><tr><th>ticket</th><th>tenant</th><th>title</th><th>externalRef</th><th>created</th></tr>${found.map(
          (t) =>
            html`<tr><td><a class="mono" href="${ticketHref(t)}">${t.id}</a></td><td>${t.tenant}</td><td>${t.title}</td><td class="mono">${t.externalRef ?? '-'}</td><td>${fmtTime(t.createdAt)}</td></tr>`,
        )}</table></section>`
      : html`<section><p>No ticket${where} has the id, idempotency key, externalRef, event id or notification id <code>${q}</code>.</p></section>`;
  return page('Ticket lookup', session, html`${form}${result}`);
}
