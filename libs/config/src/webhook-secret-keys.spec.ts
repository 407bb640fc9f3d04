import { loadConfig } from './config';
import { DEV_WEBHOOK_SECRET_KEY } from './webhook-secret-keys';

const b64 = (fill: number, n = 32) => Buffer.alloc(n, fill).toString('base64');

describe('WEBHOOK_SECRET_KEYS', () => {
  it('parses id:base64 pairs, newest first; outside production the development key decrypts last', () => {
    const ring = loadConfig({ WEBHOOK_SECRET_KEYS: `k2:${b64(2)}, k1:${b64(1)}` }).notifier.secretKeys;
    expect(ring.keys.map((k) => k.id)).toEqual(['k2', 'k1', 'dev']);
    expect(ring.keys[0].key).toEqual(Buffer.alloc(32, 2));
    expect(ring.development).toBe(false);
  });

  it('unset: the development key outside production, no key at all in production', () => {
    expect(loadConfig({}).notifier.secretKeys).toEqual({ keys: [DEV_WEBHOOK_SECRET_KEY], development: true });
    expect(loadConfig({ NODE_ENV: 'production' }).notifier.secretKeys).toEqual({ keys: [], development: false });
    const prod = loadConfig({ NODE_ENV: 'production', WEBHOOK_SECRET_KEYS: `k1:${b64(1)}` }).notifier.secretKeys;
    expect(prod.keys.map((k) => k.id)).toEqual(['k1']);
  });

  it.each([
    [`k1:${b64(1, 16)}`, /base64 of exactly 32 bytes/],
    [`k1 ${b64(1)}`, /an id of letters/],
    [`dev:${b64(1)}`, /built-in development key/],
    [`k1:${b64(1)},k1:${b64(2)}`, /appears twice/],
  ])('refuses %s, saying what the form is', (value, why) => {
    expect(() => loadConfig({ WEBHOOK_SECRET_KEYS: value })).toThrow(why);
    expect(() => loadConfig({ WEBHOOK_SECRET_KEYS: value })).toThrow(/WEBHOOK_SECRET_KEYS/);
  });
});
