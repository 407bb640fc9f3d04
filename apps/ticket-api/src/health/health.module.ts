import { Module } from '@nestjs/common';
import { RelayModule } from '../relay/relay.module';
import { HealthController } from './health.controller';
import { HealthRepository } from './health.repository';

@Module({ imports: [RelayModule], controllers: [HealthController], providers: [HealthRepository] })
export class HealthModule {}
