import { PermanentError, RetryableError } from './ticket-client.errors';

/** errno codes of a key store that will fail the same way until someone fixes its path or permissions (a file
 * that is not a key store throws a SyntaxError, as FileKeyStore does). */
const BROKEN_STORE = new Set([
  'ENOTDIR',
  'EISDIR',
  'EACCES',
  'EPERM',
  'EROFS',
  'ENAMETOOLONG',
  'ELOOP',
  'EINVAL',
  // A full disk or quota needs someone to free space: waiting a few seconds does not help.
  'ENOSPC',
  'EDQUOT',
]);

/** A key store failure: permanent when its cause is the store's path or permissions, else retryable; nothing was sent. */
export function keyStoreError(error: unknown, intentId: string): PermanentError | RetryableError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const cause = error instanceof Error ? error.message : String(error);
  if ((code !== undefined && BROKEN_STORE.has(code)) || error instanceof SyntaxError)
    return new PermanentError({
      code: 'key_store_failed',
      message: `The idempotency key store cannot be used (${cause}); nothing was sent. Fix the key store's path or permissions`,
      cause: error,
    });
  return new RetryableError({
    code: 'key_store_failed',
    message: `Could not read or save the idempotency key (${cause}); nothing was sent`,
    cause: error,
    intentId,
  });
}
