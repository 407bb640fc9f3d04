import { maskSecret, secretProblem, urlProblem } from './webhook-target';

describe('webhook target checks', () => {
  it('takes http(s) URLs only', () => {
    expect(urlProblem('https://hooks.example.com/t')).toBeUndefined();
    expect(urlProblem('http://127.0.0.1:8080/')).toBeUndefined();
    expect(urlProblem('ftp://x.test/h')).toBe('must be an http(s) URL, got ftp:');
    expect(urlProblem('not a url')).toBe('is not a URL: not a url');
  });

  it('takes secrets of 16+ characters, or whsec_ base64 of 16+ bytes', () => {
    expect(secretProblem('sixteen-chars-ok')).toBeUndefined();
    expect(secretProblem(`whsec_${Buffer.alloc(16, 7).toString('base64')}`)).toBeUndefined();
    expect(secretProblem('short')).toBe('must be at least 16 characters');
    expect(secretProblem('whsec_not base64 at all!')).toBe('starts with whsec_ but the rest is not base64');
    expect(secretProblem(`whsec_${Buffer.alloc(10, 7).toString('base64')}`)).toBe(
      'has a whsec_ base64 part that decodes to fewer than 16 bytes',
    );
  });

  it('masks a secret down to its kind and length', () => {
    expect(maskSecret('whsec_MDEyMzQ1Njc4OWFiY2RlZg==')).toBe('whsec_**** (30 chars)');
    expect(maskSecret('plain-text-secret-123')).toBe('**** (21 chars)');
    expect(maskSecret(null)).toBe('(none)');
  });
});
