#!/usr/bin/env bash
# `npm test`: every test tier against the real PostgreSQL and the real Kafka broker.
# It starts what it needs (the local PostgreSQL cluster, the project's own Kafka broker) or says exactly
# what is missing. Extra arguments go to Jest, e.g. `npm test -- --selectProjects unit`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

require_node
install_deps
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/tickets_test}"
ensure_postgres "$TEST_DATABASE_URL"
ensure_kafka
cap_malloc_arenas
# The e2e tier has a browser test; a run of other tiers only (--selectProjects unit integration) needs no browser.
if [[ " $* " != *" --selectProjects "* || " $* " == *" e2e "* ]]; then ensure_chromium; fi
build
mkdir -p .tmp
say "type-checking the tests and benches (tsc --noEmit; the build above leaves them out)"
npx tsc -p tsconfig.json --noEmit --tsBuildInfoFile .tmp/typecheck.tsbuildinfo
say "linting (eslint) and checking the format (prettier): npm run lint, npm run format to fix the format"
npx eslint . --max-warnings 0
npx prettier --check . --log-level warn || die "files above are not formatted: run npm run format"
say "running unit, integration and e2e tests (Jest's globalSetup migrates the test database)"
# The e2e and integration tiers share one PostgreSQL and one broker on 2 cores: run the files one at a time.
mkdir -p .tmp
set +e
# Node 24.9+: Jest loads NestJS's ES modules natively with --experimental-vm-modules (see jest.config.js).
jest_node_flags=()
if node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>24||(a===24&&b>=9)?0:1)'; then
  jest_node_flags=(--experimental-vm-modules --disable-warning=ExperimentalWarning)
fi
node ${jest_node_flags[@]+"${jest_node_flags[@]}"} node_modules/jest/bin/jest.js --ci --runInBand --json --outputFile=.tmp/jest-results.json "$@"
status=$?
set -e
# One plain closing line for CI: "tests: N passed, N failed".
if [ -f .tmp/jest-results.json ]; then
  node -e 'const r=require(process.argv[1]);console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""))' "$ROOT/.tmp/jest-results.json"
fi
exit $status
