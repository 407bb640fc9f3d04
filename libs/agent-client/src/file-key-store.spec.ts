import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileKeyStore } from './file-key-store';

describe('FileKeyStore', () => {
  let dir: string;
  let path: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'key-store-'));
    path = join(dir, 'nested', 'keys.json');
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a new instance (a restarted agent) reads the key the old one saved', async () => {
    await new FileKeyStore(path).set('create:intent-1', 'ticket-create-20261130T101500Z-a3f8b2c1d4e5');
    const restarted = new FileKeyStore(path);
    expect(await restarted.get('create:intent-1')).toBe('ticket-create-20261130T101500Z-a3f8b2c1d4e5');
    expect(await restarted.get('create:intent-2')).toBeUndefined();
  });

  it('a deleted entry stays deleted after a restart', async () => {
    const store = new FileKeyStore(path);
    await store.set('a', 'key-a');
    await store.set('b', 'key-b');
    await store.delete('a');
    const restarted = new FileKeyStore(path);
    expect(await restarted.get('a')).toBeUndefined();
    expect(await restarted.get('b')).toBe('key-b');
  });

  it('keeps every entry when many writes race, from several instances on one file', async () => {
    const stores = [new FileKeyStore(path), new FileKeyStore(path), new FileKeyStore(path)];
    await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 3].set(`intent-${i}`, `key-${i}`)));
    const restarted = new FileKeyStore(path);
    for (let i = 0; i < 60; i += 1) expect(await restarted.get(`intent-${i}`)).toBe(`key-${i}`);
  });

  it('writes through rename: no temporary files are left, the file is valid JSON', async () => {
    const store = new FileKeyStore(path);
    await Promise.all([store.set('x', '1'), store.set('y', '2'), store.delete('x')]);
    expect(await readdir(join(dir, 'nested'))).toEqual(['keys.json']);
    const parsed = JSON.parse(await readFile(path, 'utf8')) as {
      version: number;
      keys: Record<string, { key: string }>;
    };
    expect(parsed.version).toBe(1);
    expect(Object.keys(parsed.keys)).toEqual(['y']);
  });

  it('treats intent ids as plain data, even "__proto__"', async () => {
    await new FileKeyStore(path).set('__proto__', 'key-proto');
    expect(await new FileKeyStore(path).get('__proto__')).toBe('key-proto');
    expect(await new FileKeyStore(path).get('toString')).toBeUndefined();
  });

  it('refuses a file that is not a key store rather than losing its keys', async () => {
    await writeFile(join(dir, 'other.json'), '{"hello": "world"}');
    await expect(new FileKeyStore(join(dir, 'other.json')).get('a')).rejects.toThrow(SyntaxError);
    await writeFile(join(dir, 'broken.json'), '{"version": 1, "keys": {');
    await expect(new FileKeyStore(join(dir, 'broken.json')).get('a')).rejects.toThrow(/broken.json is not JSON/);
  });

  it('takes an empty file (made by touch) as an empty store', async () => {
    await writeFile(join(dir, 'empty.json'), '');
    const store = new FileKeyStore(join(dir, 'empty.json'));
    expect(await store.get('a')).toBeUndefined();
    await store.set('a', 'key-a');
    expect(await new FileKeyStore(join(dir, 'empty.json')).get('a')).toBe('key-a');
  });

  describe('forgetAfterMs', () => {
    const DAY = 24 * 60 * 60 * 1000;
    const savedDaysAgo = (days: number) => new Date(Date.now() - days * DAY).toISOString();
    const fileWith = (keys: Record<string, { key: string; savedAt?: string }>) =>
      writeFile(path, `${JSON.stringify({ version: 1, keys })}\n`);

    it('drops entries saved longer ago than that when the file is next written, and keeps the rest', async () => {
      path = join(dir, 'keys.json');
      await fileWith({
        old: { key: 'key-old', savedAt: savedDaysAgo(31) },
        recent: { key: 'key-recent', savedAt: savedDaysAgo(29) },
        unstamped: { key: 'key-unstamped' },
        handEdited: { key: 'key-hand-edited', savedAt: '12' }, // Date.parse would take it for 2001
      });
      const store = new FileKeyStore(path, { forgetAfterMs: 30 * DAY });
      expect(await store.get('old')).toBe('key-old'); // a read rewrites nothing
      await store.set('new', 'key-new');
      const keys = (JSON.parse(await readFile(path, 'utf8')) as { keys: Record<string, unknown> }).keys;
      expect(Object.keys(keys).sort()).toEqual(['handEdited', 'new', 'recent', 'unstamped']);
    });

    it('unset, keeps every entry however old', async () => {
      path = join(dir, 'keys.json');
      await fileWith({ old: { key: 'key-old', savedAt: savedDaysAgo(400) } });
      const store = new FileKeyStore(path);
      await store.set('new', 'key-new');
      expect(await store.get('old')).toBe('key-old');
    });

    it('refuses a value that is not a positive number of milliseconds', () => {
      for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '30d' as unknown as number])
        expect(() => new FileKeyStore(path, { forgetAfterMs: bad })).toThrow(
          /forgetAfterMs must be a positive number of milliseconds/,
        );
    });
  });
});
