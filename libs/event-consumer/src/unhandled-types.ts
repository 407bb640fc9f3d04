import type { ConsumerMetrics } from './consumer-metrics';
import type { KitLogger as Logger } from './kit-logger';

/**
 * Valid events of a type no handler of this consumer takes: skipped (no inbox row, offsets committed past
 * them), counted per type, and logged once per type per process. Skipping them is the point of choosing
 * handlers, but a handler left out by mistake (a misspelt type, a forgotten controller) would otherwise
 * look exactly like a quiet topic.
 */
export class UnhandledTypes {
  private readonly logged = new Set<string>();

  skip(metrics: ConsumerMetrics, groupId: string, type: string, log?: Logger): void {
    metrics.unhandled.inc({ group: groupId, type });
    if (this.logged.has(type)) return;
    this.logged.add(type);
    log?.info(
      { type },
      `events of type ${type} have no handler in this consumer: skipped without an inbox row, counted in event_consumer_unhandled_skipped_total (this line once per type)`,
    );
  }
}
