// `npm run deps:check`: package-lock.json against an advisory database (scripts/deps-audit.ts). Exit 0:
// checked, no known advisory; 1: advisories (listed); 3: not checked (no source answered: each is named).
// Env: DEPS_CHECK_SOURCES (npm,osv), NPM_REGISTRY (https://registry.npmjs.org), OSV_API (https://api.osv.dev).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { audit, lockPackages, npmBulk, osv, report, type Post } from './deps-audit';

const post: Post = async (url, body, timeoutMs) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  }).catch((e: Error) => {
    throw new Error(`unreachable: ${(e.cause as Error | undefined)?.message ?? e.message}`);
  });
  return { status: res.status, json: res.status === 200 ? await res.json() : undefined };
};

const root = join(__dirname, '..', '..');
const pkgs = lockPackages(JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')));
const all = { npm: npmBulk(process.env.NPM_REGISTRY ?? 'https://registry.npmjs.org'), osv: osv(process.env.OSV_API) };
const names = (process.env.DEPS_CHECK_SOURCES ?? 'npm,osv').split(',').map((s) => s.trim()) as Array<keyof typeof all>;
const unknown = names.filter((n) => !(n in all));
if (unknown.length) {
  process.stderr.write(`deps:check: unknown source(s) ${unknown.join(', ')} in DEPS_CHECK_SOURCES (npm, osv)\n`);
  process.exit(2);
}
process.stderr.write(`deps:check: ${pkgs.length} packages from package-lock.json; asking ${names.join(', then ')}\n`);
void audit(
  pkgs,
  names.map((n) => all[n]),
  post,
).then((r) => {
  const { lines, code } = report(r);
  (code === 0 ? process.stdout : process.stderr).write(`${lines.join('\n')}\n`);
  process.exitCode = code;
});
