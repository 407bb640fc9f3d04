export { reconcile, reconcileReport, formatFindings, duplicateCreationRatio, CHECK_IDS } from './reconcile';
export type { Finding, ReconcileOptions, ReconcileReport, CheckId } from './reconcile';
export {
  ReconcileRunsRepository,
  type ReconcileRun,
  type ReconcileTrigger,
  type StoredReconcileRun,
} from './reconcile-runs.repository';
export { ReconcileSchedule, type ReconcileScheduleSettings } from './reconcile-schedule';
export { checkStatement, sweepQuery } from './reconcile.repository';
