import { Controller, Get, Param } from '@nestjs/common';
import { ApiKeyAuth, CurrentPrincipal } from '../auth/auth.guard';
import type { Principal } from '../auth/api-key.resolver';
import { parseIdempotencyKey } from './idempotency-key';
import { KeyStatusUseCase } from './key-status.use-case';

@Controller('v1/idempotency-keys')
export class IdempotencyController {
  constructor(private readonly status: KeyStatusUseCase) {}

  /** `{key}` is the key itself, URL-encoded (the bare form, or the quoted sf-string form). */
  @ApiKeyAuth()
  @Get(':key')
  get(@CurrentPrincipal() principal: Principal, @Param('key') key: string) {
    return this.status.execute(principal.tenantId, parseIdempotencyKey(key));
  }
}
