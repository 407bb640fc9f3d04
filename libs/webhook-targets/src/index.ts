export { WebhookTargetsRepository } from './webhook-targets.repository';
export type { ReencryptProgress, TenantWebhookTarget } from './webhook-targets.repository';
export { maskSecret, urlProblem, secretProblem } from './webhook-target';
// The error set() throws when no key can encrypt (WEBHOOK_SECRET_KEYS unset in production).
export { SecretKeyError } from '@tickets/notifications';
