import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { RelayModule } from '../relay/relay.module';
import { CancelTicketUseCase } from './cancel-ticket.use-case';
import { CreateTicketUseCase } from './create-ticket.use-case';
import { TicketsController } from './tickets.controller';
import { TicketsRepository } from './tickets.repository';

@Module({
  imports: [AuthModule, IdempotencyModule, RelayModule],
  controllers: [TicketsController],
  providers: [TicketsRepository, CreateTicketUseCase, CancelTicketUseCase],
  // The MCP endpoint's tools call the same use cases in process.
  exports: [TicketsRepository, CreateTicketUseCase, CancelTicketUseCase],
})
export class TicketsModule {}
