import { z } from 'zod';
import { CancelTicketInput, CreateTicketInput, INPUT_LIMITS, Ticket } from '@tickets/contracts';
import { PROBLEMS, PROBLEM_ADVICE } from '../common/problem';
import { STATS_OPENAPI_PATHS } from '../stats/stats.openapi';

const schema = (s: z.ZodType, io: 'input' | 'output' = 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const keyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'One key per intent, reused on every retry of it. sf-string form ("...") or a bare token; 1-255 printable ASCII. Scoped to your tenant.',
  schema: { type: 'string', maxLength: 257 },
};

const problem = (desc: string) => ({ description: desc, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });
/** What every authenticated route can also answer. */
const guarded = {
  '401': problem('unauthorized'),
  '429': problem('rate_limited: your tenant is over RATE_LIMIT_PER_SECOND (or your address over its failed-key budget); wait Retry-After, same key'),
};
const operator = {
  security: [{ metricsToken: [] }],
  description: 'With METRICS_TOKEN set: Authorization: Bearer <METRICS_TOKEN>. Without it: loopback clients only (404 to others).',
};
const ticketResponse = (desc: string) => ({ description: desc, content: { 'application/json': { schema: { $ref: '#/components/schemas/Ticket' } } } });

/** The OpenAPI 3.1 document served at /openapi.json, built from the same zod schemas the API validates with. */
export function buildOpenApi(retention: { replayWindowMs: number; keyRetentionMs: number }) {
  const hours = (ms: number) => `${Math.round(ms / 3_600_000)} h`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent-safe tickets API',
      version: '1.0.0',
      description: [
        'A ticket API that AI agents can retry safely. Every write takes an Idempotency-Key: a replay returns the first',
        `response byte for byte (with Idempotent-Replayed: true) for ${hours(retention.replayWindowMs)}; after that the key still`,
        `resolves to the ticket it made for ${hours(retention.keyRetentionMs)} (410 idempotency_key_expired names it).`,
        'Errors are RFC 9457 problem+json with a stable `code` and `retryable`, whatever layer gives them: any route can also',
        'answer 400 malformed_request (broken HTTP), 408 request_timeout (the request did not arrive within HTTP_REQUEST_TIMEOUT),',
        '417 expectation_failed, 431 headers_too_large and, while a process shuts down, 503 shutting_down.',
      ].join(' '),
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths: {
      '/v1/tickets': {
        post: {
          summary: 'Create a ticket (idempotent)',
          parameters: [keyHeader],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateTicketInput' } } } },
          responses: {
            '201': { ...ticketResponse('Created now (or a replay of that answer, with Idempotent-Replayed: true).'), headers: { Location: { schema: { type: 'string' } } } },
            '200': {
              ...ticketResponse('A ticket with this externalRef already existed; it is returned and nothing new is created.'),
              headers: { 'Ticket-Deduplicated': { schema: { type: 'string', enum: ['externalRef'] } } },
            },
            '400': problem(
              `validation_failed (no NUL or lone surrogate in any string or key; metadata at most ${INPUT_LIMITS.metadataMaxDepth} levels deep and ${INPUT_LIMITS.metadataMaxEntries} keys and items), malformed_json, idempotency_key_missing, idempotency_key_invalid`,
            ),
            ...guarded,
            '409': problem('idempotency_key_in_use: retry with the same key after Retry-After'),
            '410': problem('idempotency_key_expired: ticketId names the ticket this key made'),
            '413': problem('payload_too_large'),
            '415': problem('unsupported_media_type'),
            '422': problem('idempotency_key_reused: differingFields names what changed'),
          },
        },
        get: {
          summary: 'Find tickets: by externalRef (the read-only pre-check) or the most recent',
          parameters: [
            { name: 'externalRef', in: 'query', schema: { type: 'string' } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
            { name: 'before', in: 'query', schema: { type: 'string', format: 'date-time', description: 'An instant in the years 0001-9999' } },
          ],
          responses: {
            '200': {
              description: 'Matching tickets',
              content: { 'application/json': { schema: { type: 'object', properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Ticket' } } } } } },
            },
            '400': problem('validation_failed'),
            ...guarded,
          },
        },
      },
      '/v1/tickets/{id}': {
        get: {
          summary: 'Get a ticket',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
          responses: { '200': ticketResponse('The ticket'), '400': problem('validation_failed: not a UUID'), '404': problem('ticket_not_found'), ...guarded },
        },
      },
      '/v1/tickets/{id}/cancel': {
        post: {
          summary: 'Cancel a ticket (the compensation for a create; idempotent)',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }, keyHeader],
          requestBody: {
            required: false,
            description: 'Optional: no body, an empty body with Content-Type: application/json, {} and {"reason": "..."} are all accepted.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/CancelTicketInput' } } },
          },
          responses: { '200': ticketResponse('The cancelled ticket (the same on every retry and on a second cancel)'), '404': problem('ticket_not_found'), ...guarded },
        },
      },
      '/v1/idempotency-keys/{key}': {
        get: {
          summary: 'What happened to key K? Ask this after a timeout, before sending again',
          parameters: [{ name: 'key', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': { description: 'processing | completed (with the stored response) | expired', content: { 'application/json': { schema: { $ref: '#/components/schemas/KeyStatus' } } } },
            '404': problem('idempotency_key_not_found: nothing is known; sending again with this key is safe'),
            ...guarded,
          },
        },
      },
      '/mcp': {
        post: {
          summary: 'MCP over Streamable HTTP (stateless): the ticket tools for agent hosts; see docs/mcp.md',
          description:
            'One JSON-RPC message per POST (initialize, tools/list, tools/call, ...), answered with JSON. Send Accept: application/json, text/event-stream. A browser Origin must be on MCP_ALLOWED_ORIGINS.',
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['jsonrpc'] } } } },
          responses: {
            '200': { description: 'the JSON-RPC response' },
            '202': { description: 'a notification, accepted' },
            '400': problem('validation_failed: not one JSON-RPC 2.0 message'),
            '403': problem('origin_not_allowed'),
            '406': problem('not_acceptable'),
            ...guarded,
          },
        },
      },
      ...STATS_OPENAPI_PATHS,
      '/health/live': { get: { summary: 'Liveness', security: [], responses: { '200': { description: 'alive' } } } },
      '/health/ready': {
        get: { summary: 'Readiness (checks the database)', security: [], responses: { '200': { description: 'ready' }, '503': problem('database_unavailable (the error itself is only logged)') } },
      },
      '/health/outbox': { get: { ...operator, summary: 'Outbox lag, pending and dead-lettered rows, relay leadership', responses: { '200': { description: 'relay statistics' }, '401': problem('unauthorized') } } },
      '/metrics': { get: { ...operator, summary: 'Prometheus metrics', responses: { '200': { description: 'text exposition format' }, '401': problem('unauthorized') } } },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key: npm run cli -- api-keys create --tenant <slug>' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, for the operator endpoints' },
      },
      schemas: {
        CreateTicketInput: schema(CreateTicketInput, 'input'),
        CancelTicketInput: schema(CancelTicketInput, 'input'),
        Ticket: schema(Ticket),
        KeyStatus: {
          type: 'object',
          required: ['key', 'state', 'ticketId', 'createdAt', 'expiresAt'],
          properties: {
            key: { type: 'string' },
            state: { type: 'string', enum: ['processing', 'completed', 'expired'] },
            ticketId: { type: ['string', 'null'] },
            operation: { type: ['string', 'null'] },
            response: { type: 'object', properties: { status: { type: 'integer' }, body: {} } },
            createdAt: { type: ['string', 'null'], format: 'date-time' },
            replayUntil: { type: ['string', 'null'], format: 'date-time' },
            expiresAt: { type: ['string', 'null'], format: 'date-time' },
          },
        },
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail', 'code', 'retryable'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string', enum: Object.keys(PROBLEMS) },
            retryable: { type: 'boolean' },
          },
          additionalProperties: true,
        },
      },
    },
    'x-problem-codes': Object.fromEntries(Object.entries(PROBLEMS).map(([code, p]) => [code, { ...p, advice: PROBLEM_ADVICE[code as keyof typeof PROBLEMS] }])),
  };
}
