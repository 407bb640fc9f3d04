import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { serveMetrics, type MetricsEndpoint, type Readiness } from './metrics-endpoint';

/** What an unknown type is labelled as when it does not look like an event type, or once the labels are used up. */
export const OTHER_TYPE = 'other';
/** Distinct `type` labels of event_consumer_unknown_skipped_total per process; later new types count as `other`. */
export const MAX_UNKNOWN_TYPES = 50;
/** The shape of an event type name (`ticket.archived.v9`), lower case, at most 100 characters. */
const TYPE_LABEL = /^[a-z0-9_.-]{1,100}$/;

/** Prometheus metrics of one consumer process, on a registry of its own (two consumers in one process don't clash). */
export class ConsumerMetrics {
  readonly registry = new Registry();
  private readonly labels = ['group'] as const;
  readonly processed = new Counter({
    name: 'event_consumer_processed_total',
    help: 'Events handled for the first time by this group (inbox row written)',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly duplicates = new Counter({
    name: 'event_consumer_duplicates_skipped_total',
    help: 'Events already in the inbox (redelivery, replay, duplicate publish): handler not called',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly deadLettered = new Counter({
    name: 'event_consumer_dead_lettered_total',
    help: 'Messages dead-lettered, by cause (invalid message, handler failed every attempt, held behind an earlier dead letter of its ticket)',
    labelNames: ['group', 'cause'],
    registers: [this.registry],
  });
  readonly unknown = new Counter({
    name: 'event_consumer_unknown_skipped_total',
    help: `Envelopes of an event type or version this build does not know: skipped (types not like an event type, and those after the first ${MAX_UNKNOWN_TYPES}, as type="${OTHER_TYPE}")`,
    labelNames: ['group', 'type'],
    registers: [this.registry],
  });

  /**
   * Counts an envelope of a type this build does not know. The type is the producer's string, unchecked: a
   * producer sending garbage (or a new type per message) would otherwise make a series per value, without
   * bound, in this process and in Prometheus. Only a type shaped like one gets a label, and only the first
   * MAX_UNKNOWN_TYPES of them; the rest are counted together as `other`.
   */
  countUnknown(group: string, type: string): void {
    let label = OTHER_TYPE;
    if (TYPE_LABEL.test(type) && (this.unknownTypes.has(type) || this.unknownTypes.size < MAX_UNKNOWN_TYPES)) {
      this.unknownTypes.add(type);
      label = type;
    }
    this.unknown.inc({ group, type: label });
  }
  /** The unknown types labelled so far (countUnknown). */
  private readonly unknownTypes = new Set<string>();
  readonly unhandled = new Counter({
    name: 'event_consumer_unhandled_skipped_total',
    help: 'Valid events of a type no handler of this consumer takes: skipped, no inbox row (counted again when read again)',
    labelNames: ['group', 'type'],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'event_consumer_handler_retries_total',
    help: 'Failed handler attempts that were retried',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly handlerSeconds = new Histogram({
    name: 'event_consumer_handler_duration_seconds',
    help: 'Time in the handlers per transaction: all the events of a chunk together, or one event retried alone',
    labelNames: this.labels,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly rebuilds = new Counter({
    name: 'event_consumer_rebuilds_total',
    help: 'Times the kafkajs consumer gave up (no restart) and was rebuilt',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly commitFailures = new Counter({
    name: 'event_consumer_offset_commit_failures_total',
    help: 'Offset commits that failed: the offsets stay resolved and the next commit carries them. Rising: a rebalance, or the group coordinator unreachable',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: 'event_consumer_lag',
    help: 'High watermark minus the next offset to read, per partition, after the last chunk handled',
    labelNames: ['group', 'topic', 'partition'],
    registers: [this.registry],
  });

  constructor(defaultMetrics = false) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Serves GET /metrics and GET /health/ready (200 while `ready()`, else 503 with the reason) on
   * host:port (port 0: a free one); resolves with the bound port. A taken port is a MetricsPortError
   * naming `setting`, the variable or option that moves it.
   */
  serve(
    port: number,
    host: string,
    ready: () => Readiness = () => ({ ready: true, state: 'running' }),
    setting = 'metrics.port',
  ): Promise<MetricsEndpoint> {
    return serveMetrics(this.registry, { port, host }, ready, setting);
  }
}
