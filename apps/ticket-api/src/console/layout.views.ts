import type { ConsoleSession } from './console-sessions';
import { SafeHtml, html } from './html';

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f5f6f8}
header{background:#1d232a;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#cfe3ff;text-decoration:none}header form{margin-left:auto}
main{padding:12px 16px;max-width:1100px}
section{background:#fff;border:1px solid #d8dce2;border-radius:6px;padding:10px 14px;margin:0 0 12px}
h1{font-size:18px;margin:4px 0 10px}h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eceef1;padding:3px 6px;text-align:left;vertical-align:top}
th{font-weight:600;color:#4a5260}code,.mono{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
.ok{color:#1a7f37}.bad{color:#b42318;font-weight:600}.warn{color:#9a6700}.muted{color:#6b7280}
.tiles{display:flex;gap:12px;flex-wrap:wrap}.tile{min-width:150px}.tile b{display:block;font-size:22px}
.flash{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:4px;margin-bottom:12px}
.chart svg{font-size:10px;fill:#4a5260;max-width:100%}.chart{margin:4px 0}.legend span{margin-right:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
form.inline{display:inline}button{cursor:pointer}input[type=text],input[type=password],input[type=search]{padding:4px;min-width:280px}
ol.timeline{list-style:none;padding:0;border-left:3px solid #d8dce2;margin-left:8px}
ol.timeline li{padding:2px 0 6px 12px;position:relative}
ol.timeline li:before{content:"";position:absolute;left:-7px;top:7px;width:11px;height:11px;border-radius:50%;background:#8c959f}
ol.timeline li.good:before{background:#1a7f37}ol.timeline li.fail:before{background:#b42318}`;

const STYLE_SAFE = new SafeHtml(STYLE);

/** Security headers of every console answer: no script at all, no framing, nothing cached. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** A POST form with the session's CSRF token and the given hidden fields. */
export function postForm(
  action: string,
  session: ConsoleSession,
  fields: Record<string, string>,
  label: string,
  extra: SafeHtml = html``,
): SafeHtml {
  return html`<form class="inline" method="post" action="${action}"><input type="hidden" name="csrf" value="${session.csrf}">${Object.entries(
    fields,
  ).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}${extra}<button type="submit">${label}</button></form>`;
}

export function page(title: string, session: ConsoleSession | undefined, body: SafeHtml): string {
  const nav = session
    ? html`<a href="/">Overview</a><a href="/dead-letters">Dead letters</a><a href="/tickets">Ticket lookup</a>${postForm('/logout', session, {}, 'Log out')}`
    : html``;
  const flash = session?.flash?.length
    ? html`<div class="flash" role="status">${session.flash.map((f) => html`<div>${f}</div>`)}</div>`
    : html``;
  if (session) session.flash = undefined;
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · tickets ops console</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE_SAFE}</style></head>
<body><header><strong>tickets ops console</strong>${nav}</header><main>${flash}<h1>${title}</h1>${body}</main></body></html>`
    .value;
}

export function loginPage(message?: string): string {
  return page(
    'Log in',
    undefined,
    html`${message ? html`<p class="bad" role="alert">${message}</p>` : html``}
<section><form method="post" action="/login"><p><label>Admin token (ADMIN_TOKEN)<br><input type="password" name="token" autocomplete="current-password" autofocus required></label></p>
<p><button type="submit">Log in</button></p></form></section>`,
  );
}

export function messagePage(title: string, message: string, session?: ConsoleSession): string {
  return page(title, session, html`<section><p>${message}</p><p><a href="/">Back to the overview</a></p></section>`);
}

export const fmtMs = (ms: number) =>
  ms < 1_000
    ? `${Math.round(ms)} ms`
    : ms < 120_000
      ? `${(ms / 1_000).toFixed(1)} s`
      : ms < 7_200_000
        ? `${Math.round(ms / 60_000)} min`
        : `${(ms / 3_600_000).toFixed(1)} h`;
export const fmtTime = (d: Date | string | null | undefined) =>
  d ? new Date(d).toISOString().replace('T', ' ').replace('Z', ' UTC') : '-';
