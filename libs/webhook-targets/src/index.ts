export { WebhookTargetsRepository } from './webhook-targets.repository';
export type { TenantWebhookTarget } from './webhook-targets.repository';
export { maskSecret, urlProblem, secretProblem } from './webhook-target';
