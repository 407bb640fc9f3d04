import type { ActionResult, DeadLetterDetail, DeadLetterItem } from '@tickets/dead-letters';
import type { ConsoleSession } from './console-sessions';
import { html, type SafeHtml } from './html';
import { fmtTime, page, postForm } from './layout.views';
import { ticketHref } from './timeline.views';

const KINDS = ['outbox', 'consumer', 'notification'] as const;
const why = html` <input type="text" name="note" placeholder="why (kept in the audit row)" maxlength="500">`;

function actions(i: DeadLetterItem, session: ConsoleSession, back: string): SafeHtml {
  if (i.state !== 'dead') return html`<span class="muted">${i.state}</span>`;
  const fields = { kind: i.kind, id: i.id, back };
  return html`${postForm('/dead-letters/requeue', session, fields, 'Requeue')} ${postForm('/dead-letters/discard', session, fields, 'Discard')}`;
}

export interface DeadLetterListFilter {
  kind?: string;
  tenant?: string;
  /** A consumer group (consumer and notification dead letters; outbox ones belong to none). */
  group?: string;
  /** Text in the reason, any case. */
  reason?: string;
  all: boolean;
}

export function deadLettersPage(
  items: DeadLetterItem[],
  filter: DeadLetterListFilter,
  session: ConsoleSession,
): string {
  const query = {
    kind: filter.kind,
    tenant: filter.tenant,
    group: filter.group,
    reason: filter.reason,
    all: filter.all ? '1' : '',
  };
  const back = `/dead-letters?${new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => !!e[1])).toString()}`;
  const form = html`<section><form method="get" action="/dead-letters">
<label>kind <select name="kind"><option value="">every kind</option>${KINDS.map((k) => html`<option value="${k}"${k === filter.kind ? html` selected` : html``}>${k}</option>`)}</select></label>
<label>tenant <input type="text" name="tenant" value="${filter.tenant ?? ''}" placeholder="slug"></label>
<label>group <input type="text" name="group" value="${filter.group ?? ''}" placeholder="consumer group"></label>
<label>reason <input type="text" name="reason" value="${filter.reason ?? ''}" placeholder="text in the reason"></label>
<label><input type="checkbox" name="all" value="1"${filter.all ? html` checked` : html``}> also requeued and discarded</label> <button type="submit">Filter</button></form>
<p class="muted">Find out why (Show), fix the cause (the receiver, the topic's limit, the consumer), then requeue. Requeue and discard act only on what is still dead; each is recorded in dead_letter_actions with this session's name. The same actions as <code>npm run cli -- dead-letters</code>.</p></section>`;
  const table = items.length
    ? html`<section><table><tr><th>kind</th><th>dead since</th><th>tenant</th><th>ticket</th><th>event</th><th>attempts</th><th>reason</th><th></th></tr>${items.map(
        (i) => html`<tr id="dl-${i.id}"><td>${i.kind}</td><td>${fmtTime(i.deadAt)}</td><td>${i.tenant ?? '-'}</td>
<td>${i.ticketId ? html`<a class="mono" href="${ticketHref({ id: i.ticketId, tenant: i.tenant })}">${i.ticketId}</a>` : '-'}</td><td>${i.eventType ?? '-'}</td><td>${i.attempts ?? '-'}</td><td>${i.reason}</td>
<td><a href="/dead-letters/show?kind=${i.kind}&amp;id=${i.id}">Show</a> ${actions(i, session, back)}</td></tr>`,
      )}</table></section>`
    : filter.group && filter.kind === 'outbox'
      ? html`<section><p class="muted">Outbox dead letters belong to no consumer group: clear the group to list them.</p></section>`
      : html`<section><p class="ok">Nothing is dead${filter.kind ? ` of kind ${filter.kind}` : ''}${filter.tenant ? ` for tenant ${filter.tenant}` : ''}${filter.group ? ` in group ${filter.group}` : ''}${filter.reason ? ` with "${filter.reason}" in the reason` : ''}.</p></section>`;
  return page('Dead letters', session, html`${form}${table}`);
}

const consumerLink = (id: string) => html`<a class="mono" href="/dead-letters/show?kind=consumer&id=${id}">${id}</a>`;

/**
 * A consumer dead letter's copy (when requeued), the events of its ticket held behind it, and the requeue to
 * run next with its dry run: the same facts as deadLetterFate prints for the CLIs, with links.
 */
function consumerFate(d: DeadLetterDetail) {
  const f = d.consumer;
  if (!f) return html``;
  const c = f.copy;
  const copy =
    c?.state === 'handled'
      ? html`handled by group ${f.groupId}`
      : c?.state === 'dead-again'
        ? html`dead-lettered again as ${consumerLink(c.deadLetter!)} (${c.cause === 'held' && c.heldBy ? html`held behind ${consumerLink(c.heldBy)}` : (c.reason ?? '')})`
        : html`not read by group ${f.groupId} yet (is a consumer of the group running?)`;
  const h = f.heldBehind;
  const [first] = f.next?.dryRun ?? [];
  const next = !f.next
    ? html``
    : first?.outcome === 'would-requeue'
      ? html`requeue ${f.next.id === d.item.id ? html`this one` : consumerLink(f.next.id)}: it would produce ${f.next.dryRun.length} message(s), in their order`
      : html`${first?.message ?? ''}`;
  return html`${c ? html`<tr><th>copy</th><td colspan="3">${copy}</td></tr>` : html``}${h ? html`<tr><th>held behind it</th><td colspan="3">${h.count} event(s) of its ticket, still dead, the first ${consumerLink(h.first)}${c?.state === 'not-read' ? html`: requeue it once the copy is handled` : html``}</td></tr>` : html``}${f.next ? html`<tr><th>next</th><td colspan="3">${next}</td></tr>` : html``}`;
}

export function deadLetterPage(d: DeadLetterDetail, dryRun: ActionResult | undefined, session: ConsoleSession): string {
  const i = d.item;
  const back = `/dead-letters/show?kind=${i.kind}&id=${i.id}`;
  const attempts = d.attempts?.length
    ? html`<h2>Attempts</h2><table><tr><th>#</th><th>at</th><th>status</th><th>error</th></tr>${d.attempts.map(
        (a) =>
          html`<tr><td>${a.attemptNo}</td><td>${fmtTime(a.at)}</td><td>${a.statusCode ?? '-'}</td><td>${a.error ?? ''}</td></tr>`,
      )}</table>`
    : html``;
  const history = d.history.length
    ? html`<h2>Operator actions</h2><table><tr><th>at</th><th>action</th><th>by</th><th>note</th></tr>${d.history.map(
        (h) => html`<tr><td>${fmtTime(h.at)}</td><td>${h.action}</td><td>${h.actor}</td><td>${h.note ?? ''}</td></tr>`,
      )}</table>`
    : html`<p class="muted">No operator action yet.</p>`;
  const buttons =
    i.state === 'dead'
      ? html`<p>${postForm('/dead-letters/requeue', session, { kind: i.kind, id: i.id, back }, 'Requeue', why)}</p><p>${postForm('/dead-letters/discard', session, { kind: i.kind, id: i.id, back }, 'Discard', why)}</p>`
      : html``;
  return page(
    `Dead letter ${i.id}`,
    session,
    html`<section><table><tr><th>kind</th><td>${i.kind}</td><th>state</th><td>${i.state}</td></tr>
<tr><th>tenant</th><td>${i.tenant ?? '-'}</td><th>ticket</th><td>${i.ticketId ? html`<a class="mono" href="${ticketHref({ id: i.ticketId, tenant: i.tenant })}">${i.ticketId}</a>` : '-'}</td></tr>
<tr><th>reason</th><td colspan="3">${i.reason}</td></tr><tr><th>where</th><td colspan="3">${i.where}</td></tr>${consumerFate(d)}</table>
${dryRun ? html`<p><strong>A requeue now would:</strong> ${dryRun.outcome}: ${dryRun.message}</p>` : html``}${buttons}</section>
<section>${attempts}${history}<h2>Content</h2><pre class="mono">${JSON.stringify(d.content, null, 2)}</pre></section>`,
  );
}
