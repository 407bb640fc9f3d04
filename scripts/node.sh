#!/usr/bin/env bash
# `node` on the project's pinned version (see require_node in scripts/lib.sh): the npm scripts run the
# compiled apps through this, so `npm run cli`, `npm run mcp`, the benches and the apps use the same
# Node.js as `npm start` and `npm test`. Arguments go to node unchanged.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_node
cap_malloc_arenas
exec node "$@"
