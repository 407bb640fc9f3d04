import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { AuthModule } from './auth/auth.module';
import { ProblemFilter } from './common/problem.filter';
import { ConsoleModule } from './console/console.module';
import { DocsModule } from './docs/docs.module';
import { EdgeModule } from './edge/edge.module';
import { HealthModule } from './health/health.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { McpModule } from './mcp/mcp.module';
import { CoreModule } from './infra/core.module';
import { ReconcileModule } from './reconcile/reconcile.module';
import { RelayModule } from './relay/relay.module';
import { StatsModule } from './stats/stats.module';
import { TicketsModule } from './tickets/tickets.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(config, logger),
        EdgeModule.forRoot(config),
        AuthModule,
        IdempotencyModule,
        TicketsModule,
        RelayModule,
        ReconcileModule,
        HealthModule,
        DocsModule,
        StatsModule,
        ConsoleModule,
        McpModule,
      ],
      providers: [{ provide: APP_FILTER, useFactory: () => new ProblemFilter(logger) }],
    };
  }
}
