import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiKeyGuard, CurrentPrincipal } from '../auth/auth.guard';
import type { Principal } from '../auth/api-key.resolver';
import { GetStatsUseCase } from './get-stats.use-case';

@Controller('v1/stats')
@UseGuards(ApiKeyGuard)
export class StatsController {
  constructor(private readonly stats: GetStatsUseCase) {}

  @Get()
  get(@CurrentPrincipal() principal: Principal) {
    return this.stats.execute(principal.tenantId);
  }
}
