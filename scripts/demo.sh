#!/usr/bin/env bash
# `npm run demo`: simulated agents create tickets through a fault-injecting proxy (lost answers,
# timeouts, resets, parallel duplicate tool calls); ends with a table that must show 0 duplicates.
# Brings up what it needs like `npm start` (PostgreSQL, Kafka, build, migrate), then runs
# dist/scripts/demo.js, which starts the API (relay inside) and the notification consumer itself.
# Settings: see the top of scripts/demo.ts (DEMO_INTENTS, DEMO_AGENTS, ...). With TICKETS_API_URL and
# TICKETS_API_KEY set it uses that API instead (DATABASE_URL must be its database, for the count).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

require_node
install_deps
use_database_url
ensure_postgres "$DATABASE_URL"
if [ -z "${TICKETS_API_URL:-}" ] || [ -z "${TICKETS_API_KEY:-}" ]; then
  ensure_kafka
fi
build
say "migrating $(mask_url "$DATABASE_URL")"
node scripts/db-migrate.mjs deploy
exec node dist/scripts/demo.js "$@"
