import { Module } from '@nestjs/common';
import { IdempotencyKeysRepository } from '@tickets/idempotency';
import { AuthModule } from '../auth/auth.module';
import { Database } from '../infra/database';
import { IdempotencyController } from './idempotency.controller';
import { IdempotentCommandRunner } from './idempotent-command.runner';
import { KeyStatusUseCase } from './key-status.use-case';
import { PurgeService } from './purge.service';

@Module({
  imports: [AuthModule],
  controllers: [IdempotencyController],
  providers: [
    { provide: IdempotencyKeysRepository, useFactory: (db: Database) => new IdempotencyKeysRepository(db.prisma), inject: [Database] },
    IdempotentCommandRunner,
    KeyStatusUseCase,
    PurgeService,
  ],
  exports: [IdempotentCommandRunner],
})
export class IdempotencyModule {}
