import { Controller, Get } from '@nestjs/common';
import { ApiKeyAuth, CurrentPrincipal } from '../auth/auth.guard';
import type { Principal } from '../auth/api-key.resolver';
import { GetStatsUseCase } from './get-stats.use-case';

@Controller('v1/stats')
export class StatsController {
  constructor(private readonly stats: GetStatsUseCase) {}

  @ApiKeyAuth()
  @Get()
  get(@CurrentPrincipal() principal: Principal) {
    return this.stats.execute(principal.tenantId);
  }
}
