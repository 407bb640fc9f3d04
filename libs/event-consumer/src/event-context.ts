import { BaseRpcContext } from '@nestjs/microservices';
import type { PoolClient } from 'pg';
import type { InvalidMessage } from './envelope-parser';

interface Where {
  groupId: string;
  topic: string;
  partition: number;
  /** 1 on the first try; > 1 when the kit retries an event whose handler failed. */
  attempt: number;
}

/** What both contexts carry: where the messages came from, the connection, the attempt. */
abstract class KitContext<W extends Where> extends BaseRpcContext<[W, PoolClient]> {
  /** The open transaction the kit commits (inbox rows included) before it commits the offsets. */
  get tx(): PoolClient {
    return this.args[1];
  }
  get groupId(): string {
    return this.args[0].groupId;
  }
  get topic(): string {
    return this.args[0].topic;
  }
  get partition(): number {
    return this.args[0].partition;
  }
  get attempt(): number {
    return this.args[0].attempt;
  }
}

/** `@Ctx()` of an @OnTicketEvent handler. */
export class TicketEventContext extends KitContext<Where & { offset: string }> {
  get offset(): string {
    return this.args[0].offset;
  }
}

/**
 * `@Ctx()` of an @OnTicketEventBatch handler. With inbox 'handler', `tx` is a connection outside any
 * transaction: the handler's one statement is its own transaction.
 */
export class TicketEventBatchContext extends KitContext<
  Where & { offsets: string[]; values: Buffer[]; traceparents: (string | null)[]; invalid: InvalidMessage[] }
> {
  /** Offsets of the events passed, same order. */
  get offsets(): readonly string[] {
    return this.args[0].offsets;
  }
  /** The message values as read from Kafka (valid UTF-8 JSON), same order: store them as text, no re-serialising. */
  get values(): readonly Buffer[] {
    return this.args[0].values;
  }
  /**
   * The W3C trace context of each event's processing, same order (tracing on: the kit's span for the
   * event, a child of the request that caused it; off: the message's `traceparent`; null without one).
   * Store it with work done later for the event, so that work stays in the event's trace.
   */
  get traceparents(): readonly (string | null)[] {
    return this.args[0].traceparents;
  }
  /** Only with inbox 'handler': the chunk's invalid messages, which the handler must dead-letter itself. */
  get invalid(): readonly InvalidMessage[] {
    return this.args[0].invalid;
  }
}

/** What a batch handler with inbox 'handler' returns. */
export interface OwnInboxResult {
  processed: number;
  duplicates: number;
}
