import { signWebhook, signingKey, verifyWebhook, webhookHeaders } from './signature';

describe('webhook signature (Standard Webhooks)', () => {
  it('matches the published test vector', () => {
    // From the Standard Webhooks reference libraries' test suite.
    const sig = signWebhook(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('uses the UTF-8 bytes of a secret without the whsec_ prefix', () => {
    expect(signingKey('plain-password')).toEqual(Buffer.from('plain-password', 'utf8'));
    expect(signWebhook('plain-password', 'id', 1, 'b')).not.toBe(
      signWebhook('whsec_cGxhaW4tcGFzc3dvcmQ=', 'id', 2, 'b'),
    );
    // whsec_ + base64("plain-password") is the same key as the plain string.
    expect(signWebhook('plain-password', 'id', 1, 'b')).toBe(signWebhook('whsec_cGxhaW4tcGFzc3dvcmQ=', 'id', 1, 'b'));
  });

  it('rejects a whsec_ secret with nothing to decode', () => {
    expect(() => signingKey('whsec_')).toThrow(/empty or invalid/);
  });

  it('puts the id, the unix-seconds timestamp and the signature in the headers', () => {
    const h = webhookHeaders(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      '{"test": 2432232314}',
      1614265330_999,
    );
    expect(h).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('verifies what it signs, among several signatures, and nothing else', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    const h = webhookHeaders(secret, 'msg_1', body);
    expect(verifyWebhook(secret, h, body)).toBe(true);
    expect(verifyWebhook(secret, { ...h, 'webhook-signature': `v1,bm90IGl0 ${h['webhook-signature']}` }, body)).toBe(
      true,
    );
    expect(verifyWebhook(secret, h, `${body} `)).toBe(false);
    expect(verifyWebhook('whsec_cGxhaW4tcGFzc3dvcmQ=', h, body)).toBe(false);
    expect(verifyWebhook(secret, { ...h, 'webhook-id': 'msg_2' }, body)).toBe(false);
    expect(verifyWebhook(secret, { 'webhook-id': 'msg_1' }, body)).toBe(false);
  });

  it('refuses a timestamp more than the tolerance (default 5 minutes) in the past or the future', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    const sentAt = 1_700_000_000_000;
    const h = webhookHeaders(secret, 'msg_1', body, sentAt);
    expect(verifyWebhook(secret, h, body, { nowMs: sentAt + 299_000 })).toBe(true);
    expect(verifyWebhook(secret, h, body, { nowMs: sentAt - 299_000 })).toBe(true);
    expect(verifyWebhook(secret, h, body, { nowMs: sentAt + 301_000 })).toBe(false);
    expect(verifyWebhook(secret, h, body, { nowMs: sentAt - 301_000 })).toBe(false);
    expect(verifyWebhook(secret, h, body, { nowMs: sentAt + 3_600_000, toleranceSeconds: 3_601 })).toBe(true);
    expect(
      verifyWebhook(secret, { ...h, 'webhook-timestamp': `${h['webhook-timestamp']}.5` }, body, { nowMs: sentAt }),
    ).toBe(false);
  });
});
