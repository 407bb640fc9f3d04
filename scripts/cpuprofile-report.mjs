#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof; bench:create's BENCH_CPU_PROF) as markdown and, with
// --svg <file>, draws its flame graph (widths = samples; colour by where the code lives).
//
//   node scripts/cpuprofile-report.mjs <file.cpuprofile> [--top 25] [--svg flame.svg] [--title text] [--per N]
//
// --per N: also print self time per request, N = the requests the process served while profiled.
// Idle time ("(idle)", "(program)") is reported but left out of the percentages of busy time.
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a) && !args[args.indexOf(a) - 1]?.startsWith('--'));
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
if (!file) {
  console.error(
    'usage: node scripts/cpuprofile-report.mjs <file.cpuprofile> [--top 25] [--svg out.svg] [--title text] [--per N]',
  );
  process.exit(2);
}
const top = Number(opt('top', 25));
const per = opt('per') ? Number(opt('per')) : undefined;
const profile = JSON.parse(readFileSync(file, 'utf8'));

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Self time per node from the sample stream (timeDeltas[i] is the time before sample i).
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i + 1] ?? 0;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
}
const totalUs = [...self.values()].reduce((a, b) => a + b, 0);
const IDLE = new Set(['(idle)', '(program)']);

/** Where code lives: a package under node_modules, the project's own code, node internals, or V8. */
function area(cf) {
  const url = cf.url ?? '';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/generated/prisma/')) return 'prisma client (generated)';
  if (/\/dist\/(apps|libs|bench)\//.test(url)) return 'project: ' + /\/dist\/((?:apps|libs)\/[^/]+)/.exec(url)?.[1];
  if (url.startsWith('node:')) return 'node: ' + url.slice(5).split('/')[0];
  if (!url) return cf.functionName.startsWith('(') ? cf.functionName : 'native / V8 builtins';
  return 'other';
}
const label = (cf) =>
  `${cf.functionName || '(anonymous)'} ${(cf.url ?? '').replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, '')}:${cf.lineNumber + 1}`;

const busyUs = [...self]
  .filter(([id]) => !IDLE.has(byId.get(id).callFrame.functionName))
  .reduce((a, [, v]) => a + v, 0);
const fn = new Map();
const areas = new Map();
for (const [id, us] of self) {
  const cf = byId.get(id).callFrame;
  if (IDLE.has(cf.functionName)) continue;
  fn.set(label(cf), (fn.get(label(cf)) ?? 0) + us);
  areas.set(area(cf), (areas.get(area(cf)) ?? 0) + us);
}
const pct = (us) => ((100 * us) / busyUs).toFixed(1);
const ms = (us) => (us / 1000).toFixed(0);
const perReq = (us) => (per ? ` | ${(us / 1000 / per).toFixed(3)}` : '');
const perHead = per ? ' | ms per request' : '';
const perSep = per ? '|---' : '';

const out = [];
out.push(
  `Profile ${file.split('/').pop()}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (the rest idle/program)${per ? `, ${per} requests` : ''}.`,
  '',
);
out.push(`| self time by area | ms | % of busy${perHead} |`, `|---|---|---${perSep}|`);
for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, top))
  out.push(`| ${k} | ${ms(v)} | ${pct(v)}${perReq(v)} |`);
out.push('', `| top ${top} functions by self time | ms | % of busy${perHead} |`, `|---|---|---${perSep}|`);
for (const [k, v] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top))
  out.push(`| \`${k.replace(/\|/g, '\\|')}\` | ${ms(v)} | ${pct(v)}${perReq(v)} |`);
console.log(out.join('\n'));

const svgFile = opt('svg');
if (svgFile) {
  // Total (self + descendants) per node, then an icicle laid out from the root, idle left out.
  const total = new Map();
  const sum = (id) => {
    const n = byId.get(id);
    if (IDLE.has(n.callFrame.functionName)) return 0;
    let t = self.get(id) ?? 0;
    for (const c of n.children ?? []) t += sum(c);
    total.set(id, t);
    return t;
  };
  const root = profile.nodes[0].id;
  sum(root);
  const W = 1600;
  const H = 16;
  const rects = [];
  let depthMax = 0;
  const colours = {};
  const colour = (a) =>
    (colours[a] ??= a.startsWith('project')
      ? '#e8a33d'
      : a.startsWith('node:') || a.startsWith('native') || a.startsWith('(')
        ? '#9fb7d9'
        : `hsl(${[...a].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 360, 7)},55%,70%)`);
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const lay = (id, x, depth) => {
    const t = total.get(id) ?? 0;
    const w = (t / busyUs) * W;
    if (w < 1) return; // narrower than a pixel: left out (the file stays small)
    const cf = byId.get(id).callFrame;
    depthMax = Math.max(depthMax, depth);
    const name = label(cf);
    const a = area(cf);
    rects.push(
      `<g><title>${esc(name)} (${a}): ${(t / 1000).toFixed(0)} ms, ${((100 * t) / busyUs).toFixed(1)} %</title>` +
        `<rect x="${x.toFixed(1)}" y="${depth * H}" width="${w.toFixed(1)}" height="${H - 1}" fill="${colour(a)}"/>` +
        (w > 40
          ? `<text x="${(x + 2).toFixed(1)}" y="${depth * H + 12}">${esc(name.slice(0, Math.floor(w / 6.5)))}</text>`
          : '') +
        '</g>',
    );
    let cx = x;
    for (const c of byId.get(id).children ?? []) {
      lay(c, cx, depth + 1);
      cx += ((total.get(c) ?? 0) / busyUs) * W;
    }
  };
  lay(root, 0, 0);
  const title = opt('title', file.split('/').pop());
  const height = (depthMax + 1) * H + 24;
  writeFileSync(
    svgFile,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="monospace" font-size="10">` +
      `<text x="2" y="${height - 8}" font-size="12">${esc(title)} (busy time only; hover for details)</text>` +
      rects.join('') +
      '</svg>\n',
  );
  console.error(`flame graph written to ${svgFile}`);
}
