import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Metrics } from '../metrics/metrics';
import { problemBody } from '../common/problem';
import { RelayService } from '../relay/relay.service';
import { HealthRepository } from './health.repository';

@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthRepository,
    private readonly metrics: Metrics,
    private readonly relay: RelayService,
  ) {}

  /** Outbox lag (age of the oldest unpublished row), pending and dead-lettered rows, leadership. */
  @Get('health/outbox')
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
      reply
        .code(503)
        .header('Retry-After', '2')
        .type('application/problem+json')
        .send(problemBody('database_unavailable', `Database check failed: ${(err as Error).message}`, { checks: { database: 'down' } }));
    }
  }

  @Get('metrics')
  async prometheus(@Res() reply: FastifyReply): Promise<void> {
    reply.type(this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}
