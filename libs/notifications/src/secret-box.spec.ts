import { randomBytes } from 'node:crypto';
import { SecretKeyError, WebhookSecretCipher, storedSecretKind } from './secret-box';

const key = (id: string) => ({ id, key: randomBytes(32) });
const TENANT = '0b4f9f47-3c55-4c8e-9a53-6f0a1d1e2b3c';
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('webhook secrets at rest (AES-256-GCM)', () => {
  it('stores no character of the secret, and a fresh nonce each time', () => {
    const box = new WebhookSecretCipher([key('k1')]);
    const a = box.encrypt(SECRET, TENANT);
    const b = box.encrypt(SECRET, TENANT);
    expect(a).toMatch(/^enc:v1:k1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toContain('MfKQ9r8');
    expect(a).not.toBe(b);
    expect(box.decrypt(a, TENANT)).toBe(SECRET);
    expect(storedSecretKind(a)).toEqual({ kind: 'encrypted', keyId: 'k1' });
  });

  it('after a rotation the newest key encrypts and the old one still decrypts; stale() names what to re-encrypt', () => {
    const k1 = key('k1');
    const old = new WebhookSecretCipher([k1]).encrypt(SECRET, TENANT);
    const rotated = new WebhookSecretCipher([key('k2'), k1]);
    expect(rotated.decrypt(old, TENANT)).toBe(SECRET);
    expect(rotated.stale(old)).toBe(true);
    const again = rotated.encrypt(SECRET, TENANT);
    expect(storedSecretKind(again)).toEqual({ kind: 'encrypted', keyId: 'k2' });
    expect(rotated.stale(again)).toBe(false);
    expect(rotated.stale(SECRET)).toBe(true);
  });

  it('reads a plaintext row from before encryption as it is', () => {
    expect(new WebhookSecretCipher([]).decrypt('plain-old-secret-123', TENANT)).toBe('plain-old-secret-123');
    expect(storedSecretKind('plain-old-secret-123')).toEqual({ kind: 'plaintext' });
  });

  it('refuses, naming the variable or the key: no key to encrypt, a retired key, another tenant, a tampered value', () => {
    expect(() => new WebhookSecretCipher([]).encrypt(SECRET, TENANT)).toThrow(/WEBHOOK_SECRET_KEYS is not set/);
    const k1 = key('k1');
    const stored = new WebhookSecretCipher([k1]).encrypt(SECRET, TENANT);
    expect(() => new WebhookSecretCipher([key('k2')]).decrypt(stored, TENANT)).toThrow(
      /encrypted with key "k1", which is not in WEBHOOK_SECRET_KEYS \(keys: k2\)/,
    );
    const box = new WebhookSecretCipher([k1]);
    expect(() => box.decrypt(stored, 'another-tenant')).toThrow(SecretKeyError);
    const tampered = stored.slice(0, -4) + (stored.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(() => box.decrypt(tampered, TENANT)).toThrow(/does not decrypt with key "k1"/);
  });
});
