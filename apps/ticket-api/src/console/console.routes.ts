import { unsafeTextReason } from '@tickets/contracts';
import { DEAD_LETTER_KINDS, type DeadLetterKind, type DeadLetters } from '@tickets/dead-letters';
import type { Logger } from '@tickets/logger';
import type { ConsoleRepository } from './console.repository';
import { actorOf, type ConsoleSession, type ConsoleSessions } from './console-sessions';
import type { ConsumerLag } from './consumer-lag';
import { deadLetterPage, deadLettersPage } from './dead-letters.views';
import type { IdempotencySampler } from './idempotency-sampler';
import type { LoginBudget } from './login-budget';
import { fmtMs, loginPage, messagePage } from './layout.views';
import { overviewPage } from './overview.views';
import type { TicketTimelineRepository } from './ticket-timeline.repository';
import { lookupPage, timelinePage } from './timeline.views';

/** One request as the routes see it: the form fields of a POST, the query of a GET. */
export interface ConsoleRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
  /** The session of the request's cookie, if live. */
  session?: ConsoleSession;
  address: string;
}

export interface ConsoleReply {
  status: number;
  body?: string;
  location?: string;
  headers?: Record<string, string>;
  /** Set the session cookie to this session; null clears it. */
  setSession?: ConsoleSession | null;
}

export interface ConsoleDeps {
  sessions: ConsoleSessions;
  logins: LoginBudget;
  repo: ConsoleRepository;
  timeline: TicketTimelineRepository;
  deadLetters: DeadLetters;
  lag: ConsumerLag;
  sampler: IdempotencySampler;
  groups: { notifier: string; all: string[] };
  outboxRetentionMs: number;
  log: Logger;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const see = (location: string): ConsoleReply => ({ status: 303, location });
/**
 * Only a path of this console: never another site (an open redirect), a scheme-relative URL, or a
 * control character (a browser drops a tab, so `/<TAB>/evil.com` would be `//evil.com`; a newline
 * cannot be put in a Location header at all).
 */
const localPath = (p: string | null) =>
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  p && p.startsWith('/') && !p.startsWith('//') && !p.includes('\\') && !/[\x00-\x1f\x7f]/.test(p) ? p : '/';

/**
 * The console's routes (a thin edge: validate, call one reader or the dead-letter code path of the
 * CLI, render). Authentication, the CSRF check and the session cookie are decided here; the server
 * around it only parses and sends.
 */
export class ConsoleRoutes {
  constructor(private readonly d: ConsoleDeps) {}

  async handle(req: ConsoleRequest): Promise<ConsoleReply> {
    const key = `${req.method} ${req.path}`;
    // PostgreSQL's text cannot hold NUL or a lone surrogate: such a field is a 400, never a failed query.
    for (const [name, value] of [...req.query, ...req.form]) {
      const why = unsafeTextReason(value);
      if (why) return { status: 400, body: messagePage('Bad request', `The field ${name} ${why}.`, req.session) };
    }
    if (key === 'GET /login') return req.session ? see('/') : { status: 200, body: loginPage() };
    if (key === 'POST /login') return this.logIn(req);
    const known = [
      'GET /',
      'GET /tickets',
      'GET /dead-letters',
      'GET /dead-letters/show',
      'POST /logout',
      'POST /dead-letters/requeue',
      'POST /dead-letters/discard',
    ];
    if (!known.includes(key)) {
      const other = known.some((k) => k.endsWith(` ${req.path}`)) || req.path === '/login';
      return other
        ? { status: 405, body: messagePage('Method not allowed', `${req.method} is not allowed on ${req.path}.`) }
        : { status: 404, body: messagePage('Not found', `There is no page ${req.path}.`, req.session) };
    }
    const s = req.session;
    if (!s)
      return req.method === 'GET'
        ? see('/login')
        : { status: 401, body: loginPage('Your session has ended (or you never logged in): log in again.') };
    if (req.method === 'POST' && !this.d.sessions.csrfOk(s, req.form.get('csrf') ?? undefined)) {
      this.d.log.warn(
        { session: s.label, path: req.path, address: req.address },
        'console: POST without a valid CSRF token refused',
      );
      return {
        status: 403,
        body: messagePage(
          'Refused',
          'This form did not come from a page of this console (its CSRF token is missing or wrong). Reload the page and try again.',
          s,
        ),
      };
    }
    switch (key) {
      case 'GET /':
        return { status: 200, body: overviewPage(await this.overview(), s) };
      case 'GET /tickets':
        return this.tickets(req, s);
      case 'GET /dead-letters':
        return this.deadLetterList(req, s);
      case 'GET /dead-letters/show':
        return this.deadLetterShow(req, s);
      case 'POST /logout':
        this.d.sessions.logOut(s.id);
        this.d.log.info({ session: s.label, address: req.address }, 'console: logged out');
        return { ...see('/login'), setSession: null };
      default:
        return this.act(req, s, key === 'POST /dead-letters/requeue' ? 'requeue' : 'discard');
    }
  }

  /** The token is compared first: a wrong one is counted, the right one always logs in (LoginBudget backs off). */
  private async logIn(req: ConsoleRequest): Promise<ConsoleReply> {
    await this.d.logins.backOff(req.address);
    const session = this.d.sessions.logIn(req.form.get('token') ?? '');
    if (!session) {
      const wait = this.d.logins.recordFailure(req.address);
      this.d.log.warn(
        { address: req.address, overBudget: wait > 0 },
        'console: log-in with a wrong token refused (many in a row: someone is guessing; check the address, and ADMIN_TOKEN should be long and random)',
      );
      return wait > 0
        ? {
            status: 429,
            headers: { 'retry-after': String(wait) },
            body: loginPage(`Too many wrong tokens: wait ${wait} s before the next try.`),
          }
        : { status: 401, body: loginPage('That is not the admin token.') };
    }
    this.d.log.info({ session: session.label, address: req.address }, 'console: logged in');
    return { ...see('/'), setSession: session };
  }

  private async overview() {
    const [outbox, notifier, lag, outcomes, deadLetters, reconcile] = await Promise.all([
      this.d.repo.outbox(),
      this.d.repo.notifications(this.d.groups.notifier),
      this.d.lag.report(this.d.groups.all),
      this.d.sampler.history(),
      this.d.repo.deadLetterCounts(this.d.groups.notifier),
      this.d.repo.latestReconcileRun(),
    ]);
    return {
      outbox,
      notifier: { groupId: this.d.groups.notifier, ...notifier },
      lag,
      outcomes,
      deadLetters,
      reconcile,
    };
  }

  /**
   * `?id=<uuid>&tenant=<slug>` opens exactly that ticket (the lookup's links); `?q=` looks up by id,
   * key, externalRef, event or notification id, in `tenant` when picked: one match opens, several list.
   */
  private async tickets(req: ConsoleRequest, s: ConsoleSession): Promise<ConsoleReply> {
    const q = (req.query.get('q') ?? '').trim().slice(0, 1_000);
    const tenant = req.query.get('tenant')?.trim() || undefined;
    const id = req.query.get('id')?.trim();
    const note = `published rows are deleted after OUTBOX_RETENTION (${fmtMs(this.d.outboxRetentionMs)}); none was dead-lettered either`;
    if (id) {
      const t = UUID.test(id) ? await this.d.timeline.timeline(id, tenant) : null;
      return t ? { status: 200, body: timelinePage(t, s, note) } : { status: 404, body: lookupPage(id, [], s, tenant) };
    }
    if (!q) return { status: 200, body: lookupPage('', [], s, tenant) };
    const found = await this.d.timeline.find(q, tenant);
    if (found.length !== 1) return { status: found.length ? 200 : 404, body: lookupPage(q, found, s, tenant) };
    const t = await this.d.timeline.timeline(found[0].id, found[0].tenant);
    return t ? { status: 200, body: timelinePage(t, s, note) } : { status: 404, body: lookupPage(q, [], s, tenant) };
  }

  private async deadLetterList(req: ConsoleRequest, s: ConsoleSession): Promise<ConsoleReply> {
    const kind = this.kindOf(req.query.get('kind'));
    const tenant = req.query.get('tenant')?.trim() || undefined;
    const all = req.query.get('all') === '1';
    const group = req.query.get('group')?.trim() || undefined;
    const reason = req.query.get('reason')?.trim() || undefined;
    const filter = { kind: kind ?? undefined, tenant, group, reason, all };
    const items = await this.d.deadLetters.list({ ...filter, limit: 200 });
    return { status: 200, body: deadLettersPage(items, filter, s) };
  }

  private async deadLetterShow(req: ConsoleRequest, s: ConsoleSession): Promise<ConsoleReply> {
    const kind = this.kindOf(req.query.get('kind'));
    const id = req.query.get('id') ?? '';
    if (!kind || !UUID.test(id))
      return {
        status: 400,
        body: messagePage(
          'Bad request',
          'A dead letter is named by kind (outbox, consumer, notification) and id (a uuid).',
          s,
        ),
      };
    const detail = await this.d.deadLetters.show(id, kind);
    if (!detail) return { status: 404, body: messagePage('Not found', `No ${kind} dead letter ${id}.`, s) };
    // A dry run reads only and records nothing: what a requeue would do now.
    const dry =
      detail.item.state === 'dead'
        ? (
            await this.d.deadLetters.requeue({
              kind,
              filter: { id, limit: 1 },
              actor: { by: actorOf(s), note: null },
              dryRun: true,
            })
          )[0]
        : undefined;
    return { status: 200, body: deadLetterPage(detail, dry, s) };
  }

  /** Requeue or discard one dead letter through the CLI's code path; the result is shown on the page the form came from. */
  private async act(req: ConsoleRequest, s: ConsoleSession, action: 'requeue' | 'discard'): Promise<ConsoleReply> {
    const kind = this.kindOf(req.form.get('kind'));
    const id = req.form.get('id') ?? '';
    if (!kind || !UUID.test(id))
      return {
        status: 400,
        body: messagePage(
          'Bad request',
          'A dead letter is named by kind (outbox, consumer, notification) and id (a uuid).',
          s,
        ),
      };
    const note = req.form.get('note')?.trim().slice(0, 500) || null;
    const request = { kind, filter: { id, limit: 1 }, actor: { by: actorOf(s), note }, dryRun: false };
    const results =
      action === 'requeue' ? await this.d.deadLetters.requeue(request) : await this.d.deadLetters.discard(request);
    this.d.log.info(
      { session: s.label, action, kind, id, outcomes: results.map((r) => r.outcome) },
      `console: dead letter ${action}`,
    );
    s.flash = results.length ? results.map((r) => `${r.outcome}: ${r.message}`) : [`nothing to ${action}`];
    return see(localPath(req.form.get('back')));
  }

  private kindOf(v: string | null): DeadLetterKind | null {
    return DEAD_LETTER_KINDS.includes(v as DeadLetterKind) ? (v as DeadLetterKind) : null;
  }
}
