export { ApiKeysRepository, type TenantRef } from './api-keys.repository';
export { createApiKey, hashApiKey } from './api-keys';
