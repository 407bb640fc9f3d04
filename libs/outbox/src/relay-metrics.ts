import { Counter, Gauge, type Registry } from 'prom-client';
import type { PublishErrorKind } from './publish-errors';

export interface RelayGaugeSource {
  counts(): Promise<{ pending: number; oldestPendingAgeMs: number; deadLetters: number }>;
  isLeader(): boolean;
}

/**
 * The relay's Prometheus metrics. Gauges read the database at scrape time (one query per scrape,
 * shared by the gauges); a scrape while the database is down keeps the last values.
 * One relay per registry: the names are fixed.
 */
export class RelayMetrics {
  readonly published: Counter;
  readonly deadLettered: Counter;
  readonly failures: Counter<'kind'>;
  /** Acknowledged producer sends: outbox_published_total over this is the rows a send carries. */
  readonly sends: Counter;

  constructor(registry: Registry, source: RelayGaugeSource) {
    const registers = [registry];
    let inflight: Promise<Awaited<ReturnType<RelayGaugeSource['counts']>> | undefined> | undefined;
    const read = () => {
      inflight ??= source
        .counts()
        .catch(() => undefined)
        .finally(() => setTimeout(() => (inflight = undefined), 250).unref());
      return inflight;
    };
    this.published = new Counter({
      name: 'outbox_published_total',
      help: 'Outbox rows published to Kafka and acknowledged',
      registers,
    });
    this.deadLettered = new Counter({
      name: 'outbox_dead_letters_total',
      help: 'Outbox rows moved to outbox_dead_letters by this process',
      registers,
    });
    this.sends = new Counter({
      name: 'outbox_publish_sends_total',
      help: 'Producer sends the broker acknowledged (outbox_published_total / this = rows per send)',
      registers,
    });
    this.failures = new Counter({
      name: 'outbox_publish_failures_total',
      help: 'Failed producer sends by kind (transient: retried forever, permanent: counts toward dead-lettering, producer-state: producer rebuilt)',
      labelNames: ['kind'],
      registers,
    });
    new Gauge({
      name: 'outbox_pending_rows',
      help: 'Outbox rows not yet published',
      registers,
      async collect() {
        const c = await read();
        if (c) this.set(c.pending);
      },
    });
    new Gauge({
      name: 'outbox_lag_seconds',
      help: 'Age of the oldest unpublished outbox row (0 when none)',
      registers,
      async collect() {
        const c = await read();
        if (c) this.set(c.oldestPendingAgeMs / 1000);
      },
    });
    new Gauge({
      name: 'outbox_dead_letter_rows',
      help: 'Rows currently in outbox_dead_letters',
      registers,
      async collect() {
        const c = await read();
        if (c) this.set(c.deadLetters);
      },
    });
    new Gauge({
      name: 'outbox_relay_leader',
      help: '1 when this process holds the relay lock and publishes, 0 on a standby',
      registers,
      collect() {
        this.set(source.isLeader() ? 1 : 0);
      },
    });
  }

  failure(kind: PublishErrorKind): void {
    this.failures.inc({ kind });
  }
}
