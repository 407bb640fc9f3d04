import type { DeadLetterCounts, NotificationOverview, OutboxOverview, ReconcileRunRow } from './console.repository';
import type { ConsoleSession } from './console-sessions';
import type { LagReport } from './consumer-lag';
import { html, type SafeHtml } from './html';
import type { OutcomeHistory } from './idempotency-sampler';
import { fmtMs, fmtTime, page } from './layout.views';
import { barChart } from './svg-chart';

export interface Overview {
  outbox: OutboxOverview;
  notifier: { groupId: string } & NotificationOverview;
  lag: LagReport;
  outcomes: OutcomeHistory;
  deadLetters: DeadLetterCounts;
  reconcile: ReconcileRunRow | null;
}

const COLORS = ['#1a7f37', '#0969da', '#bf8700', '#cf222e', '#8250df', '#57606a', '#1b7c83', '#e16f24'];
const hhmm = (d: Date) => d.toISOString().slice(11, 16);
const tile = (label: string, value: SafeHtml | string | number, cls = '') =>
  html`<div class="tile"><span class="muted">${label}</span><b class="${cls}">${value}</b></div>`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ticketLink = (id: string) =>
  UUID.test(id)
    ? html`<a class="mono" href="/tickets?q=${encodeURIComponent(id)}">${id}</a>`
    : html`<span class="mono">${id}</span>`;

function outboxPanel(o: OutboxOverview, n: Overview['notifier']): SafeHtml {
  const lagCls = o.oldestPendingAgeMs > 60_000 ? 'bad' : o.oldestPendingAgeMs > 5_000 ? 'warn' : 'ok';
  const chart = barChart({
    title: 'Outbox events published per minute, last hour',
    columns: o.publishedPerMinute.map((m) => ({ label: hhmm(new Date(m.minute)), values: [m.count] })),
    series: [{ name: 'published', color: '#0969da' }],
  });
  const total = o.publishedPerMinute.reduce((s, m) => s + m.count, 0);
  return html`<section id="outbox"><h2>Outbox and deliveries</h2><div class="tiles">
${tile('outbox lag (oldest unpublished)', fmtMs(o.oldestPendingAgeMs), lagCls)}${tile('unpublished events', o.pending)}
${tile('published, last hour', total)}${tile('outbox dead letters', o.deadLetters, o.deadLetters ? 'bad' : 'ok')}
${tile(`webhooks pending (${n.groupId})`, n.pending)}${tile('oldest due webhook waits', fmtMs(n.oldestDueAgeMs), n.oldestDueAgeMs > 60_000 ? 'bad' : '')}</div>${chart}</section>`;
}

function lagPanel(r: LagReport): SafeHtml {
  if (!r.ok)
    return html`<section id="consumer-lag"><h2>Consumer lag (topic ${r.topic})</h2><p class="bad">Cannot read the offsets from Kafka: ${r.error}</p></section>`;
  const groups = r.groups.map((g) => {
    const cls = g.state === 'Stable' ? 'ok' : 'warn';
    const running = g.members ? `${g.members} member(s)` : 'no consumer running';
    return html`<h3>${g.groupId}: <span class="${g.totalLag ? 'warn' : 'ok'}">lag ${g.totalLag}</span> <span class="${cls}">(${g.state}, ${running})</span></h3>
${barChart({ title: `Lag per partition of group ${g.groupId}`, height: 90, columns: g.partitions.map((p) => ({ label: `p${p.partition}`, values: [p.lag] })), series: [{ name: 'lag', color: '#bf8700' }] })}
<table><tr><th>partition</th><th>committed</th><th>high watermark</th><th>lag</th></tr>${g.partitions.map(
      (p) => html`<tr><td>${p.partition}</td><td>${p.committed ?? 'none'}</td><td>${p.high}</td><td>${p.lag}</td></tr>`,
    )}</table>`;
  });
  return html`<section id="consumer-lag"><h2>Consumer lag (topic ${r.topic})</h2>${groups}</section>`;
}

function outcomesPanel(h: OutcomeHistory): SafeHtml {
  if (h.state === 'missing') {
    return html`<section id="idempotency"><h2>Idempotency outcomes, last hour</h2><p class="warn">The metric <code>${h.metric}</code> is missing from this API process's registry, so there is nothing to chart.</p></section>`;
  }
  const series = h.outcomes.map((name, i) => ({ name, color: COLORS[i % COLORS.length] }));
  const totals = h.outcomes.map((o) => [o, h.minutes.reduce((s, m) => s + (m.counts[o] ?? 0), 0)] as const);
  const all = totals.reduce((s, [, n]) => s + n, 0);
  const replayed = totals.filter(([o]) => o === 'replay').reduce((s, [, n]) => s + n, 0);
  return html`<section id="idempotency"><h2>Idempotency outcomes, last hour (this API process)</h2>
<p>${all} keyed request(s); idempotency hit rate (answered from a stored key): ${all ? `${((replayed / all) * 100).toFixed(1)} %` : '-'}. ${totals.map(([o, n]) => html`<span class="mono">${o}</span> ${n} `)}</p>
${barChart({ title: 'Idempotency outcomes per sample interval', columns: h.minutes.map((m) => ({ label: hhmm(m.at), values: h.outcomes.map((o) => m.counts[o] ?? 0) })), series })}</section>`;
}

function deadLettersPanel(d: DeadLetterCounts, notifierGroup: string): SafeHtml {
  // The notifications tile counts the notifier's group only, so its link lists that group's.
  const link = (kind: string, n: number, group?: string) =>
    html`<a href="/dead-letters?${new URLSearchParams(group ? { kind, group } : { kind }).toString()}" class="${n ? 'bad' : 'ok'}">${n}</a>`;
  return html`<section id="dead-letters"><h2>Waiting for an operator</h2><div class="tiles">${tile('outbox dead letters', link('outbox', d.outbox))}${tile('consumer dead letters', link('consumer', d.consumer))}${tile(`dead notifications (${notifierGroup})`, link('notification', d.notification, notifierGroup))}</div></section>`;
}

function reconcilePanel(r: ReconcileRunRow | null): SafeHtml {
  if (!r) return html`<section id="reconcile"><h2>Last reconciliation</h2><p class="muted">No run yet.</p></section>`;
  const rate = r.ticketsChecked ? ((r.duplicateTickets / r.ticketsChecked) * 100).toFixed(3) : '0.000';
  const findings = r.findings.length
    ? html`<table><tr><th>check</th><th>count</th><th>sample</th><th>what to do</th></tr>${r.findings.map(
        (f) =>
          html`<tr><td>${f.check}</td><td class="bad">${f.count}</td><td>${f.sample.slice(0, 5).map((s) => html`${ticketLink(s)}<br>`)}</td><td>${f.advice}</td></tr>`,
      )}</table>`
    : html`<p class="ok">Nothing found.</p>`;
  return html`<section id="reconcile"><h2>Last reconciliation</h2><p>Run ${r.id} (${r.trigger}), finished ${fmtTime(r.finishedAt)} after ${fmtMs(new Date(r.finishedAt).getTime() - new Date(r.startedAt).getTime())}: ${r.ticketsChecked} ticket(s) checked, ${r.duplicateTickets} duplicate(s) (${rate} %).</p>${findings}</section>`;
}

export function overviewPage(o: Overview, session: ConsoleSession): string {
  const lookup = html`<section><form method="get" action="/tickets"><label>Where is the event for ticket <input type="search" name="q" placeholder="ticket id, idempotency key, externalRef, event or notification id" required></label> <button type="submit">Look up</button></form></section>`;
  return page(
    'Overview',
    session,
    html`${lookup}${deadLettersPanel(o.deadLetters, o.notifier.groupId)}${outboxPanel(o.outbox, o.notifier)}${lagPanel(o.lag)}${outcomesPanel(o.outcomes)}${reconcilePanel(o.reconcile)}`,
  );
}
