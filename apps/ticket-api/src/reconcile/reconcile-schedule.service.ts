import { Inject, Injectable, type OnApplicationBootstrap, type BeforeApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { ReconcileRunsRepository, ReconcileSchedule } from '@tickets/reconcile';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { Database } from '../infra/database';
import { Metrics } from '../metrics/metrics';
import { ReconcileMetrics } from './reconcile.metrics';

/**
 * The scheduled reconciliation inside the API (RECONCILE_INTERVAL, default 1 h; 0/off: none): one
 * run per interval across all API processes (libs/reconcile ReconcileSchedule), recorded in
 * reconcile_runs; its findings are metrics of every API process (ReconcileMetrics).
 */
@Injectable()
export class ReconcileScheduleService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly schedule: ReconcileSchedule;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(LOGGER) logger: Logger, db: Database, metrics: Metrics) {
    const runs = new ReconcileRunsRepository(db.prisma);
    const reconcileMetrics = new ReconcileMetrics(metrics.registry, () => runs.latest());
    this.schedule = new ReconcileSchedule(
      db.prisma,
      { databaseUrl: config.database.url, ...config.reconcile, group: config.notifier.groupId },
      logger.child({ component: 'reconcile' }),
      (_run, error) => reconcileMetrics.runs.inc({ result: error ? 'failed' : 'ok' }),
    );
  }

  /** Before the API listens: the first look's own read, run once now (ReconcileSchedule.prepare). */
  async onApplicationBootstrap(): Promise<void> {
    await this.schedule.prepare();
    this.schedule.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.schedule.stop();
  }
}
