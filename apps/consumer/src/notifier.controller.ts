import { Controller, Inject } from '@nestjs/common';
import {
  Ctx,
  OnTicketEventBatch,
  Payload,
  TicketEventBatchContext,
  type OwnInboxResult,
  type TicketEvent,
} from '@tickets/event-consumer';
import { InboxRepository } from './inbox/inbox.repository';
import { NotifierDispatcherService } from './notifier-dispatcher.service';
import { DEFAULT_WEBHOOK_URL } from './tokens';

/**
 * The notifier's one handler. The kit hands over each chunk of a partition (every valid event in
 * offset order, copies included, their bytes and the invalid messages) on a connection outside any
 * transaction; one statement records inbox rows, notifications, dead letters and replay counters
 * atomically, and the kit commits the offsets after it returns. The statement leases the new
 * notifications the dispatcher has room for, and the dispatcher sends those at once (handOver); it also
 * records the dispatcher's deliveries finished since its last record, instead of a statement of their own.
 */
@Controller()
export class NotifierController {
  constructor(
    private readonly inbox: InboxRepository,
    private readonly dispatcher: NotifierDispatcherService,
    @Inject(DEFAULT_WEBHOOK_URL) private readonly defaultWebhookUrl: string | null,
  ) {}

  @OnTicketEventBatch({ inbox: 'handler' })
  async record(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<OwnInboxResult> {
    const r = await this.dispatcher.handOver(
      events.length,
      (lease, records) =>
        this.inbox.recordBatch(ctx.tx, {
          groupId: ctx.groupId,
          topic: ctx.topic,
          partition: ctx.partition,
          defaultWebhookUrl: this.defaultWebhookUrl,
          events,
          offsets: ctx.offsets,
          values: ctx.values,
          traceparents: ctx.traceparents,
          invalid: ctx.invalid,
          lease,
          records,
        }),
      { records: true },
    );
    return { processed: r.processed, duplicates: r.skippedDuplicate };
  }
}
