import { Module } from '@nestjs/common';
import { IdempotencyKeysRepository } from '@tickets/idempotency';
import { AuthModule } from '../auth/auth.module';
import { APP_CONFIG } from '../common/tokens';
import type { AppConfig } from '@tickets/config';
import { Database } from '../infra/database';
import { Metrics } from '../metrics/metrics';
import { IdempotencyMetrics } from './idempotency.metrics';
import { IdempotencyController } from './idempotency.controller';
import { IdempotentCommandRunner } from './idempotent-command.runner';
import { KeyStatusUseCase } from './key-status.use-case';
import { PurgeService } from './purge.service';

@Module({
  imports: [AuthModule],
  controllers: [IdempotencyController],
  providers: [
    {
      provide: IdempotencyKeysRepository,
      useFactory: (db: Database) => new IdempotencyKeysRepository(db.prisma),
      inject: [Database],
    },
    {
      provide: IdempotencyMetrics,
      useFactory: (metrics: Metrics, keys: IdempotencyKeysRepository, config: AppConfig) =>
        new IdempotencyMetrics(metrics.registry, {
          countKeysInFlight: () => keys.countKeysInFlight([config.relay.lockKey]),
        }),
      inject: [Metrics, IdempotencyKeysRepository, APP_CONFIG],
    },
    IdempotentCommandRunner,
    KeyStatusUseCase,
    PurgeService,
  ],
  exports: [IdempotentCommandRunner, KeyStatusUseCase],
})
export class IdempotencyModule {}
