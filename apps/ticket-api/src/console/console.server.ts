import { Inject, Injectable, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { AppConfig } from '@tickets/config';
import { isDatabaseUnavailable } from '@tickets/db';
import { ConsumerDeadLetters, DeadLetters, kafkaRepublisher, type MessageRepublisher } from '@tickets/dead-letters';
import { createKafkaClient } from '@tickets/kafka';
import type { Logger } from '@tickets/logger';
import { listen } from '@tickets/startup';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { clientAddress, proxyTrust, type ProxyTrust } from '../edge/client-address';
import { Database } from '../infra/database';
import { Metrics } from '../metrics/metrics';
import { ConsoleRepository } from './console.repository';
import { ConsoleRoutes, type ConsoleReply } from './console.routes';
import { ConsoleSessions, type ConsoleSession } from './console-sessions';
import { ConsumerLag } from './consumer-lag';
import { IdempotencySampler } from './idempotency-sampler';
import { LoginBudget } from './login-budget';
import { PAGE_HEADERS, messagePage } from './layout.views';
import { TicketTimelineRepository } from './ticket-timeline.repository';

export const SESSION_COOKIE = 'tickets_console';
const MAX_FORM_BYTES = 16 * 1024;

class RequestProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The ops console: a second HTTP listener of the API process (ADMIN_HOST:ADMIN_PORT, loopback by
 * default), started only when ADMIN_TOKEN is set. Server-rendered HTML, no script; see docs/console.md.
 */
@Injectable()
export class ConsoleServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private server?: Server;
  private routes?: ConsoleRoutes;
  private sessions?: ConsoleSessions;
  private lag?: ConsumerLag;
  private republisher?: MessageRepublisher;
  private consumerDeadLetters?: ConsumerDeadLetters;
  private sampleTimer?: NodeJS.Timeout;
  private readonly log: Logger;
  private readonly trust?: ProxyTrust;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    private readonly db: Database,
    private readonly metrics: Metrics,
    private readonly repo: ConsoleRepository,
    private readonly timeline: TicketTimelineRepository,
  ) {
    this.log = logger.child({ component: 'console' });
    this.trust = proxyTrust(config.edge.trustedProxies);
  }

  /** The console's base URL while it listens, else undefined (ADMIN_TOKEN unset). */
  url(): string | undefined {
    const a = this.server?.address() as AddressInfo | null | undefined;
    return a ? `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` : undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config.console;
    if (!c.token) return;
    const { kafka, notifier, edge } = this.config;
    this.sessions = new ConsoleSessions(c.token, c.sessionTtlMs);
    this.lag = new ConsumerLag(
      createKafkaClient({ brokers: kafka.brokers, clientId: `${kafka.clientId}-console` }),
      kafka.topic,
    );
    this.republisher = kafkaRepublisher(kafka.brokers, `${kafka.clientId}-console`);
    const sampler = new IdempotencySampler(this.metrics.registry, Math.ceil(3_600_000 / c.sampleIntervalMs));
    await sampler.sample();
    this.sampleTimer = setInterval(
      () =>
        void sampler
          .sample()
          .catch((err) => this.log.warn({ err }, 'console: sampling the idempotency outcomes failed')),
      c.sampleIntervalMs,
    );
    this.sampleTimer.unref();
    this.routes = new ConsoleRoutes({
      sessions: this.sessions,
      logins: new LoginBudget(c.loginFailures),
      repo: this.repo,
      timeline: this.timeline,
      deadLetters: new DeadLetters(
        this.db.prisma,
        (this.consumerDeadLetters = new ConsumerDeadLetters({
          databaseUrl: this.config.database.url,
          republisher: this.republisher,
        })),
        { defaultWebhookUrl: this.config.notifier.webhookUrl },
      ),
      lag: this.lag,
      sampler,
      groups: { notifier: notifier.groupId, all: [...new Set([notifier.groupId, this.config.stats.groupId])] },
      outboxRetentionMs: this.config.relay.retentionMs,
      log: this.log,
    });
    const server = createServer(
      { requestTimeout: edge.requestTimeoutMs, headersTimeout: edge.headersTimeoutMs, keepAliveTimeout: 5_000 },
      (req, res) => void this.serve(req, res),
    );
    try {
      await listen(server, { variable: 'ADMIN_PORT', hostVariable: 'ADMIN_HOST', port: c.port, host: c.host });
    } catch (err) {
      // A taken ADMIN_PORT stops the API's start (main.ts says which port and which variable): an API
      // that runs on without the console its operator asked for (ADMIN_TOKEN) fails later, in the dark.
      // Two APIs on one host: give the second ADMIN_PORT=0 (any free port) or another port.
      await this.beforeApplicationShutdown();
      throw err;
    }
    this.server = server;
    this.log.info({ url: this.url() }, 'ops console listening');
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.sampleTimer);
    const server = this.server;
    this.server = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await Promise.allSettled([this.lag?.close(), this.republisher?.close(), this.consumerDeadLetters?.close()]);
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const address = clientAddress(req, this.trust);
    let session: ConsoleSession | undefined;
    let reply: ConsoleReply;
    try {
      const url = requestUrl(req.url);
      session = this.sessions!.get(cookie(req.headers.cookie, SESSION_COOKIE));
      // Only the log-in form is read without a session: any other POST is refused unread (ConsoleRoutes says 401).
      const form =
        req.method === 'POST' && (session || url.pathname === '/login') ? await readForm(req) : new URLSearchParams();
      reply = await this.routes!.handle({
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        form,
        session,
        address,
      });
    } catch (err) {
      if (err instanceof RequestProblem)
        reply = { status: err.status, body: messagePage('Bad request', err.message, session) };
      else if (isDatabaseUnavailable(err)) {
        this.log.warn({ err }, 'console: the database is unavailable');
        reply = {
          status: 503,
          headers: { 'retry-after': '2' },
          body: messagePage(
            'Database unavailable',
            'The database does not answer; try again in a moment (the API log has the details).',
            session,
          ),
        };
      } else {
        const errorId = randomUUID();
        this.log.error({ err, errorId, path: req.url }, 'console: unexpected error');
        reply = {
          status: 500,
          body: messagePage('Something failed', `Unexpected error ${errorId} (the API log has the details).`, session),
        };
      }
    }
    try {
      this.send(req, res, reply);
    } catch (err) {
      // A header node refuses (nothing here should produce one): end this connection, not the API.
      this.log.error({ err, path: req.url }, 'console: could not send the answer');
      res.destroy();
    }
  }

  private send(req: IncomingMessage, res: ServerResponse, reply: ConsoleReply): void {
    const headers: Record<string, string | string[]> = { ...PAGE_HEADERS, ...reply.headers };
    if (reply.location) headers.location = reply.location;
    if (reply.setSession !== undefined) headers['set-cookie'] = this.sessionCookie(req, reply.setSession);
    res.writeHead(reply.status, headers);
    res.end(reply.body ?? '');
  }

  /**
   * HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure when configured or,
   * with `auto`, when the browser's request was https: this listener speaks plain http, so that is a
   * TLS proxy in front saying so with `X-Forwarded-Proto: https` (the flag only tightens the cookie).
   */
  private sessionCookie(req: IncomingMessage, s: ConsoleSession | null): string {
    const mode = this.config.console.cookieSecure;
    const secure = mode === 'always' || (mode === 'auto' && overHttps(req));
    const value = s
      ? `${SESSION_COOKIE}=${s.id}; Max-Age=${Math.floor((s.expiresAt - Date.now()) / 1000)}`
      : `${SESSION_COOKIE}=; Max-Age=0`;
    return `${value}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }
}

/** The request target as a URL; one that is not a path (e.g. `//[`) is a bad request, not an error of ours. */
function requestUrl(target: string | undefined): URL {
  try {
    return new URL(target ?? '/', 'http://console.invalid');
  } catch {
    throw new RequestProblem(400, 'The request target is not a valid path.');
  }
}

function overHttps(req: IncomingMessage): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  const proto = req.headers['x-forwarded-proto'];
  return (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0].trim().toLowerCase() === 'https';
}

function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A POST body: an HTML form (urlencoded), at most 16 KB. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    throw new RequestProblem(415, 'The console takes HTML forms (application/x-www-form-urlencoded) only.');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new RequestProblem(413, 'The form is too large.');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
