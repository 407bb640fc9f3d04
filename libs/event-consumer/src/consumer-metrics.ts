import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { serveMetrics, type MetricsEndpoint, type Readiness } from './metrics-endpoint';

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
    help: 'Envelopes of an event type or version this build does not know: skipped',
    labelNames: ['group', 'type'],
    registers: [this.registry],
  });
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
