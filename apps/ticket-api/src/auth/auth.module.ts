import { Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { ApiKeysRepository } from '@tickets/tenants';
import { APP_CONFIG } from '../common/tokens';
import { Database } from '../infra/database';
import { ApiKeyCacheInvalidation } from './api-key-cache';
import { ApiKeyResolver } from './api-key.resolver';
import { ApiKeyGuard } from './auth.guard';

@Module({
  providers: [
    { provide: ApiKeysRepository, useFactory: (db: Database) => new ApiKeysRepository(db.prisma), inject: [Database] },
    // One resolver (one cache) per process, shared by every module's guard, cleared by ApiKeyCacheInvalidation.
    {
      provide: ApiKeyResolver,
      useFactory: (keys: ApiKeysRepository, config: AppConfig) => new ApiKeyResolver(keys, config.auth.cacheTtlMs),
      inject: [ApiKeysRepository, APP_CONFIG],
    },
    ApiKeyCacheInvalidation,
    ApiKeyGuard,
  ],
  exports: [ApiKeysRepository, ApiKeyResolver, ApiKeyGuard],
})
export class AuthModule {}
