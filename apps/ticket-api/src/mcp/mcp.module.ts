import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { TicketsModule } from '../tickets/tickets.module';
import { McpController } from './mcp.controller';
import { McpHttpService } from './mcp-http.service';
import { McpOriginGuard } from './mcp-origin.guard';

/** MCP over Streamable HTTP at /mcp: the same tools as the stdio server, on the use cases in process. */
@Module({
  imports: [AuthModule, IdempotencyModule, TicketsModule],
  controllers: [McpController],
  providers: [McpHttpService, McpOriginGuard],
})
export class McpModule {}
