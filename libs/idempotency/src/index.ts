export { IdempotencyKeysRepository, type StoredKey, type NewKey, type PurgeReport, type KeyGuardRow } from './idempotency-keys.repository';
export { purgeIdempotencyKeys } from './purge';
