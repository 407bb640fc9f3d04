-- The W3C trace context of the event's processing (the consumer's span, or the event's own traceparent
-- with tracing off): the dispatcher sends the webhook in this trace, so it carries the trace id of the
-- request that created the ticket. NULL for notifications created before this column.
ALTER TABLE "notifications" ADD COLUMN "traceparent" TEXT
