#!/usr/bin/env bash
# `npm run pack`: builds, then writes the public packages' tarballs to dist/packages/. Installed together
# (`npm i dist/packages/*.tgz`), they resolve every @tickets/* dependency among themselves, as the
# registry would.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

require_node
install_deps
build
out="$ROOT/dist/packages"
rm -rf "$out" && mkdir -p "$out"
mapfile -t public < <(node -e '
  const { readdirSync, existsSync, readFileSync } = require("node:fs");
  for (const top of ["libs", "apps"]) for (const d of readdirSync(top)) {
    const p = `${top}/${d}/package.json`;
    if (existsSync(p) && !JSON.parse(readFileSync(p, "utf8")).private) console.log(`${top}/${d}`);
  }')
say "packing ${#public[@]} public packages into dist/packages/: ${public[*]}"
args=()
for p in "${public[@]}"; do args+=(-w "$p"); done
npm pack "${args[@]}" --pack-destination "$out" --silent >/dev/null
ls -1 "$out"
