import { inTraceOf } from '@tickets/telemetry';
import type { HttpPoster } from './http-post';
import type { ClaimedNotification } from './notifications.repository';
import { classifyStatus, parseRetryAfter, type AttemptResult } from './retry-policy';
import { webhookHeaders } from './signature';

/**
 * Sends one notification to `url` as a Standard Webhook: the body `{ type, timestamp, data }` (data: the event as read
 * from Kafka), signed with `secret` under the notification's id (webhook-id), in the event's trace (the request
 * carries `traceparent`, so the receiver can correlate it with the ticket's request). Never throws: a missing
 * response is an AttemptResult with statusCode null.
 */
export async function postWebhook(
  http: HttpPoster,
  url: string,
  row: ClaimedNotification,
  secret: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<AttemptResult> {
  const payload = JSON.parse(row.payload) as { occurredAt?: string };
  const body = JSON.stringify({ type: row.event_type, timestamp: payload.occurredAt, data: payload });
  const started = performance.now();
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'tickets-notifier/1',
    ...webhookHeaders(secret, row.id, body),
  };
  const res = await inTraceOf(row.traceparent, headers, () => http.post(url, headers, body, timeoutMs, signal));
  const durationMs = Math.round(performance.now() - started);
  if (res.statusCode === null) return { statusCode: null, error: res.error ?? 'no response', durationMs };
  const retryAfter = res.headers['retry-after'];
  return {
    statusCode: res.statusCode,
    error: classifyStatus(res.statusCode) === 'delivered' ? null : `HTTP ${res.statusCode}`,
    durationMs,
    retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : (retryAfter ?? null)),
  };
}
