export { reconcile, formatFindings } from './reconcile';
export type { Finding, ReconcileOptions } from './reconcile';
