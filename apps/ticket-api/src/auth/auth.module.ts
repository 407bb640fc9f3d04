import { Module } from '@nestjs/common';
import { ApiKeysRepository } from '@tickets/tenants';
import { Database } from '../infra/database';
import { ApiKeyGuard } from './auth.guard';

@Module({
  providers: [
    { provide: ApiKeysRepository, useFactory: (db: Database) => new ApiKeysRepository(db.prisma), inject: [Database] },
    ApiKeyGuard,
  ],
  exports: [ApiKeysRepository, ApiKeyGuard],
})
export class AuthModule {}
