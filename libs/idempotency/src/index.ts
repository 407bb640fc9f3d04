export {
  IdempotencyKeysRepository,
  type StoredKey,
  type NewKey,
  type PurgeReport,
  type KeyGuard,
  type KeyGuardRow,
} from './idempotency-keys.repository';
export { purgeIdempotencyKeys } from './purge';
