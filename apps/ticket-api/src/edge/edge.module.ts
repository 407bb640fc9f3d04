import { DynamicModule, Global, Module } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import { AdminGuard } from './admin.guard';
import { EDGE_CONFIG, EdgeLimits } from './edge-limits';

/** Request-rate limits and operator-endpoint access, available to every module's guards. */
@Global()
@Module({})
export class EdgeModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: EdgeModule,
      providers: [{ provide: EDGE_CONFIG, useValue: config.edge }, EdgeLimits, AdminGuard],
      exports: [EDGE_CONFIG, EdgeLimits, AdminGuard],
    };
  }
}
