import { Controller, Inject } from '@nestjs/common';
import type { TicketEvent } from '@tickets/contracts';
import { Ctx, OnTicketEventBatch, Payload, TicketEventBatchContext } from '@tickets/event-consumer';
import { projectEvents } from './stats-projection';
import { StatsProjectionRepository } from './stats-projection.repository';
import { STATS_GROUP_ID } from './tokens';

/** The projection's one handler: the kit hands over each chunk's new events inside its transaction. */
@Controller()
export class StatsEventsController {
  constructor(
    private readonly repo: StatsProjectionRepository,
    @Inject(STATS_GROUP_ID) private readonly groupId: string,
  ) {}

  @OnTicketEventBatch()
  async apply(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<void> {
    const { counts, days } = projectEvents(events);
    await this.repo.apply(ctx.tx, this.groupId, counts, days);
  }
}
