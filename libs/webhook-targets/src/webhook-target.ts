import { looksEncrypted, signingKey } from '@tickets/notifications';

/** What to show of a secret: its kind and length, never a character of it. */
export const maskSecret = (secret: string | null) =>
  secret ? `${secret.startsWith('whsec_') ? 'whsec_' : ''}**** (${secret.length} chars)` : '(none)';

/** Why this URL cannot be a webhook target (a phrase to follow its name), or undefined when it can. */
export function urlProblem(url: string): string | undefined {
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) ? undefined : `must be an http(s) URL, got ${u.protocol}`;
  } catch {
    return `is not a URL: ${url}`;
  }
}

/** Why this secret cannot sign webhooks (a phrase to follow its name), or undefined when it can. */
export function secretProblem(secret: string): string | undefined {
  if (secret.length < 16) return 'must be at least 16 characters';
  if (looksEncrypted(secret)) return 'starts with enc:v1:, the mark of a stored ciphertext: pick another secret';
  if (/[\r\n]/.test(secret)) return 'has a line break in it';
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice(6);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return 'starts with whsec_ but the rest is not base64';
    if (signingKey(secret).length < 16) return 'has a whsec_ base64 part that decodes to fewer than 16 bytes';
  }
  return undefined;
}
