export { API_KEYS_CHANGED_CHANNEL, ApiKeysRepository, type ActiveKey, type TenantRef } from './api-keys.repository';
export {
  createApiKey,
  hashApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  type CreateApiKeyOptions,
  type CreatedApiKey,
  type KeyLookup,
  type RevokeOutcome,
  type RotateOutcome,
} from './api-keys';
export { keyState, type Actor, type ApiKeyRow, type ApiKeyState, type NewKey } from './api-key.types';
export { ApiKeyChangeWatch } from './api-key-change-watch';
