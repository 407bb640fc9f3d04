import { Controller, Get, Inject, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Metrics } from '../metrics/metrics';
import type { Logger } from '@tickets/logger';
import { problemBody } from '../common/problem';
import { LOGGER } from '../common/tokens';
import { AdminGuard } from '../edge/admin.guard';
import { RelayService } from '../relay/relay.service';
import { HealthRepository } from './health.repository';

@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthRepository,
    private readonly metrics: Metrics,
    private readonly relay: RelayService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Outbox lag (age of the oldest unpublished row), pending and dead-lettered rows, leadership. */
  @Get('health/outbox')
  @UseGuards(AdminGuard)
  async outbox() {
    const stats = await this.relay.stats();
    return stats ?? { relay: 'disabled in this process (RELAY_ENABLED=false)' };
  }

  @Get('health/live')
  live() {
    return { status: 'ok' };
  }

  @Get('health/ready')
  async ready(@Res() reply: FastifyReply): Promise<void> {
    try {
      await this.health.ping();
      reply.send({ status: 'ok', checks: { database: 'ok' } });
    } catch (err) {
      // The error text names hosts, users and databases: it goes to the log, never to an open endpoint.
      this.logger.warn({ err }, 'readiness check: database failed');
      reply
        .code(503)
        .header('Retry-After', '2')
        .type('application/problem+json')
        .send(
          problemBody('database_unavailable', 'The database check failed; see the API log.', {
            checks: { database: 'down' },
          }),
        );
    }
  }

  @Get('metrics')
  @UseGuards(AdminGuard)
  async prometheus(@Res() reply: FastifyReply): Promise<void> {
    reply.type(this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}
