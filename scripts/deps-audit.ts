// The dependency check behind `npm run deps:check`: every package of package-lock.json against an
// advisory database, trying each source in turn (npm's bulk advisory endpoint, then osv.dev). A source
// that cannot be reached or refuses is named, and when none answers the result is "not checked", never
// a pass. Pure except for the `post` it is given.

export interface LockPackage {
  name: string;
  version: string;
}

export interface Advisory {
  name: string;
  version: string;
  id: string;
  summary: string;
  severity?: string;
  url?: string;
}

export type Post = (url: string, body: unknown, timeoutMs: number) => Promise<{ status: number; json: unknown }>;

export type AuditResult =
  | { kind: 'checked'; source: string; packages: number; advisories: Advisory[] }
  | { kind: 'unchecked'; packages: number; attempts: Array<{ source: string; error: string }> };

interface Source {
  name: string;
  check(pkgs: LockPackage[], post: Post, timeoutMs: number): Promise<Advisory[]>;
}

/** The installed packages a lockfile (v2/v3) names: each name and version once, workspace links left out. */
export function lockPackages(lock: { packages?: Record<string, { version?: string; link?: boolean }> }): LockPackage[] {
  const seen = new Map<string, LockPackage>();
  for (const [path, p] of Object.entries(lock.packages ?? {})) {
    const at = path.lastIndexOf('node_modules/');
    if (at < 0 || p.link || !p.version) continue;
    const name = path.slice(at + 'node_modules/'.length);
    seen.set(`${name}@${p.version}`, { name, version: p.version });
  }
  return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

/** npm's bulk advisory endpoint (what `npm audit` uses): {name: [versions]} in, {name: [advisory]} out. */
export const npmBulk = (registry: string): Source => ({
  name: `npm registry bulk advisories (${registry})`,
  async check(pkgs, post, timeoutMs) {
    const body: Record<string, string[]> = {};
    for (const p of pkgs) (body[p.name] ??= []).push(p.version);
    const res = await post(`${registry.replace(/\/$/, '')}/-/npm/v1/security/advisories/bulk`, body, timeoutMs);
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    const found = res.json as Record<
      string,
      Array<{ id: number; title: string; severity: string; url: string; vulnerable_versions: string }>
    >;
    // The endpoint answers per package name; the advisory's range says which versions: all listed ones are reported with it.
    return Object.entries(found).flatMap(([name, list]) =>
      list.map((a) => ({
        name,
        version: `${body[name]?.join(', ')} (vulnerable: ${a.vulnerable_versions})`,
        id: String(a.id),
        summary: a.title,
        severity: a.severity,
        url: a.url,
      })),
    );
  },
});

/** osv.dev's batch query: one query per package version, 1000 per request. */
export const osv = (api = 'https://api.osv.dev'): Source => ({
  name: `osv.dev (${api})`,
  async check(pkgs, post, timeoutMs) {
    const out: Advisory[] = [];
    for (let i = 0; i < pkgs.length; i += 1000) {
      const chunk = pkgs.slice(i, i + 1000);
      const res = await post(
        `${api}/v1/querybatch`,
        { queries: chunk.map((p) => ({ package: { name: p.name, ecosystem: 'npm' }, version: p.version })) },
        timeoutMs,
      );
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      const results = (res.json as { results?: Array<{ vulns?: Array<{ id: string }> }> }).results ?? [];
      if (results.length !== chunk.length) throw new Error(`${results.length} results for ${chunk.length} queries`);
      results.forEach((r, j) =>
        (r.vulns ?? []).forEach((v) =>
          out.push({
            ...chunk[j],
            id: v.id,
            summary: 'see the advisory',
            url: `https://osv.dev/vulnerability/${v.id}`,
          }),
        ),
      );
    }
    return out;
  },
});

/** Tries each source in order; the first that answers decides. */
export async function audit(
  pkgs: LockPackage[],
  sources: Source[],
  post: Post,
  timeoutMs = 30_000,
): Promise<AuditResult> {
  const attempts: Array<{ source: string; error: string }> = [];
  for (const s of sources) {
    try {
      return {
        kind: 'checked',
        source: s.name,
        packages: pkgs.length,
        advisories: await s.check(pkgs, post, timeoutMs),
      };
    } catch (e) {
      attempts.push({ source: s.name, error: (e as Error).message });
    }
  }
  return { kind: 'unchecked', packages: pkgs.length, attempts };
}

/** The report's lines and the exit code: 0 checked and clean, 1 advisories found, 3 NOT checked. */
export function report(r: AuditResult): { lines: string[]; code: number } {
  if (r.kind === 'unchecked')
    return {
      code: 3,
      lines: [
        `deps:check: NOT CHECKED: no advisory database answered for the ${r.packages} packages of package-lock.json:`,
        ...r.attempts.map((a) => `  ${a.source}: ${a.error}`),
        'Run it where one of them is reachable (DEPS_CHECK_SOURCES=npm,osv; NPM_REGISTRY for a mirror that serves advisories), or in CI.',
      ],
    };
  const head = `deps:check: ${r.packages} packages checked against ${r.source}`;
  if (!r.advisories.length) return { code: 0, lines: [`${head}: no known advisory`] };
  return {
    code: 1,
    lines: [
      `${head}: ${r.advisories.length} advisory(ies):`,
      ...r.advisories.map(
        (a) =>
          `  ${a.name} ${a.version}: ${a.id}${a.severity ? ` (${a.severity})` : ''} ${a.summary}${a.url ? ` ${a.url}` : ''}`,
      ),
    ],
  };
}
