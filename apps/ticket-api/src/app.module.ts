import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { ApiKeyGuard } from './auth/auth.guard';
import { ProblemFilter } from './common/problem.filter';
import { APP_CONFIG, LOGGER } from './common/tokens';
import { DocsController } from './docs/docs.controller';
import { EdgeModule } from './edge/edge.module';
import { HealthController } from './health/health.controller';
import { IdempotencyController } from './idempotency/idempotency.controller';
import { KeyStatusUseCase } from './idempotency/key-status.use-case';
import { PurgeService } from './idempotency/purge.service';
import { Database } from './infra/database';
import { Metrics } from './metrics/metrics';
import { RelayService } from './relay/relay.service';
import { CancelTicketUseCase } from './tickets/cancel-ticket.use-case';
import { CreateTicketUseCase } from './tickets/create-ticket.use-case';
import { TicketsController } from './tickets/tickets.controller';
import { TicketsRepository } from './tickets/tickets.repository';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [EdgeModule.forRoot(config)],
      controllers: [TicketsController, IdempotencyController, HealthController, DocsController],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: LOGGER, useValue: logger },
        { provide: APP_FILTER, useFactory: () => new ProblemFilter(logger) },
        Database,
        Metrics,
        ApiKeyGuard,
        TicketsRepository,
        CreateTicketUseCase,
        CancelTicketUseCase,
        KeyStatusUseCase,
        PurgeService,
        RelayService,
      ],
      exports: [Database, Metrics],
    };
  }
}
