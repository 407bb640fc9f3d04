import { Body, Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CancelTicketInput, CreateTicketInput, ListTicketsQuery, TicketIdParam } from '@tickets/contracts';
import { DomainError } from '@tickets/errors';
import { traceparentForRequest } from '@tickets/telemetry';
import { ApiKeyAuth, CurrentPrincipal } from '../auth/auth.guard';
import type { Principal } from '../auth/api-key.resolver';
import { parseOrThrow } from '../common/validation';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import { Metrics } from '../metrics/metrics';
import { CancelTicketUseCase } from './cancel-ticket.use-case';
import { CreateTicketUseCase } from './create-ticket.use-case';
import { toTicket } from './ticket.mapper';
import { TicketsRepository } from './tickets.repository';
import type { WriteResult } from './tickets.results';

export const DEDUP_HEADER = 'Ticket-Deduplicated';

@Controller('v1/tickets')
export class TicketsController {
  constructor(
    private readonly createTicket: CreateTicketUseCase,
    private readonly cancelTicket: CancelTicketUseCase,
    private readonly tickets: TicketsRepository,
    private readonly metrics: Metrics,
  ) {}

  @ApiKeyAuth()
  @Post()
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const idempotencyKey = parseIdempotencyKey(req.headers['idempotency-key']);
    const input = parseOrThrow(CreateTicketInput, body);
    const result = await this.createTicket.execute({
      tenantId: principal.tenantId,
      idempotencyKey,
      input,
      traceparent: traceparentForRequest(req.headers),
      correlationId: String(req.id),
    });
    this.send(reply, result);
  }

  @ApiKeyAuth()
  @Post(':id/cancel')
  async cancel(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const idempotencyKey = parseIdempotencyKey(req.headers['idempotency-key']);
    const ticketId = parseOrThrow(TicketIdParam, id, 'ticket id');
    const input = parseOrThrow(CancelTicketInput, body ?? {});
    const result = await this.cancelTicket.execute({
      tenantId: principal.tenantId,
      ticketId,
      idempotencyKey,
      input,
      traceparent: traceparentForRequest(req.headers),
      correlationId: String(req.id),
    });
    this.send(reply, result);
  }

  @ApiKeyAuth()
  @Get(':id')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
    const ticketId = parseOrThrow(TicketIdParam, id, 'ticket id');
    const row = await this.tickets.findTicket(principal.tenantId, ticketId);
    if (!row) throw new DomainError('ticket_not_found', `No ticket ${ticketId} in your tenant.`, { ticketId });
    return toTicket(row);
  }

  /** The read-only pre-check (`?externalRef=`), or the most recent tickets. */
  @ApiKeyAuth()
  @Get()
  async list(@CurrentPrincipal() principal: Principal, @Query() query: unknown) {
    const q = parseOrThrow(ListTicketsQuery, query, 'query');
    const rows = q.externalRef
      ? await this.tickets.findByExternalRef(principal.tenantId, q.externalRef)
      : await this.tickets.listRecent(principal.tenantId, q.limit, q.before ? new Date(q.before) : undefined);
    return { items: rows.map(toTicket) };
  }

  private send(reply: FastifyReply, { answer, fromStore }: WriteResult): void {
    // The metric label and the header keep their public name, "replayed", for an answer from the key's store.
    this.metrics.writes.inc({ outcome: fromStore ? 'replayed' : answer.outcome });
    if (fromStore) reply.header('Idempotent-Replayed', 'true');
    if (answer.outcome === 'deduplicated') reply.header(DEDUP_HEADER, 'externalRef');
    if (answer.status === 201) reply.header('Location', `/v1/tickets/${answer.ticketId}`);
    reply.code(answer.status).type('application/json').send(answer.body);
  }
}
