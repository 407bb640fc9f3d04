import type { KitLogger, TicketEventsOptions, TicketEventsServer } from '@tickets/event-consumer';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';

/** Kit options for tests: the test database and broker, small retry delays, /metrics on a free port. */
export function kitOptions(
  topic: string,
  groupId: string,
  over: Partial<TicketEventsOptions> = {},
): TicketEventsOptions {
  return {
    groupId,
    topic,
    brokers: TEST_KAFKA_BROKERS,
    databaseUrl: TEST_DATABASE_URL,
    kafka: { clientId: 'kit-test' },
    chunkSize: 100,
    partitionsConcurrency: 2,
    maxAttempts: 3,
    retryBaseMs: 20,
    retryMaxDelayMs: 100,
    metrics: { port: 0 },
    ...over,
  };
}

/** A counter of a running kit consumer's /metrics, by name and a label filter (0 when absent). */
export async function kitMetric(server: TicketEventsServer, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** A kit logger that keeps each info, warn and error line as `<msg> <fields as JSON>` in `lines`. */
export function capturingLogger(lines: string[]): KitLogger {
  const note = (obj: unknown, msg?: string) => void lines.push(`${msg ?? ''} ${JSON.stringify(obj)}`);
  const log = { debug: () => undefined, info: note, warn: note, error: note, child: () => log };
  return log as unknown as KitLogger;
}
