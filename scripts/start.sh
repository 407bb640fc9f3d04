#!/usr/bin/env bash
# `npm start`: the whole system for a newcomer on a fresh machine. Installs what is missing, uses
# DATABASE_URL or the local PostgreSQL (or docker compose where Docker exists), brings up Kafka,
# migrates, creates a demo tenant, prints its API key and example curl commands, then runs the API
# (with the outbox relay inside), the notification consumer and (without NOTIFY_WEBHOOK_URL) a local
# webhook sink that prints each delivery, until Ctrl-C.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

require_node
install_deps
use_database_url
export PORT="${PORT:-3000}"
ensure_postgres "$DATABASE_URL"
ensure_kafka
build
say "migrating $DATABASE_URL"
node scripts/db-migrate.mjs deploy

if port_open 127.0.0.1 "$PORT"; then
  die "port $PORT is already in use (an API from an earlier npm start?). Stop it, or run PORT=3001 npm start."
fi

say "creating the demo tenant's API key"
KEY_JSON=$(node -r ./scripts/register-aliases.js dist/apps/cli/src/main.js api-keys create --tenant demo --json)
API_KEY=$(node -pe 'JSON.parse(process.argv[1]).apiKey' "$KEY_JSON")
BASE="http://127.0.0.1:$PORT"

pids=()
cleanup() {
  trap - INT TERM EXIT
  say "stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

node --max-old-space-size=192 -r ./scripts/register-aliases.js dist/apps/ticket-api/src/main.js &
pids+=($!)
SINK_NOTE="NOTIFY_WEBHOOK_URL=${NOTIFY_WEBHOOK_URL:-}"
if [ -z "${NOTIFY_WEBHOOK_URL:-}" ]; then
  # No webhook target configured: deliver to a local sink that prints each notification.
  export WEBHOOK_SINK_PORT="${WEBHOOK_SINK_PORT:-3999}"
  export NOTIFY_WEBHOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
  export NOTIFY_WEBHOOK_URL="http://127.0.0.1:$WEBHOOK_SINK_PORT/webhooks"
  node -r ./scripts/register-aliases.js dist/scripts/webhook-sink.js &
  pids+=($!)
  SINK_NOTE="a local sink that prints each delivery below ($NOTIFY_WEBHOOK_URL; set NOTIFY_WEBHOOK_URL/SECRET for your own)"
fi
node --max-old-space-size=192 -r ./scripts/register-aliases.js dist/apps/consumer/src/main.js &
pids+=($!)

for _ in $(seq 1 60); do
  curl -fsS "$BASE/health/ready" >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || die "the API exited during start-up; its log is above."
  sleep 0.5
done

cat <<TXT

  The ticket service is up.
    API        $BASE        (docs: $BASE/docs, OpenAPI: $BASE/openapi.json, metrics: $BASE/metrics from this host, or with METRICS_TOKEN)
    tenant     demo
    API key    $API_KEY
    webhooks   $SINK_NOTE

  Try it:
    export TICKETS_API_KEY=$API_KEY
    curl -s -X POST $BASE/v1/tickets \\
      -H "Authorization: Bearer \$TICKETS_API_KEY" -H 'Idempotency-Key: "demo-1"' \\
      -H 'Content-Type: application/json' -d '{"title":"Printer on fire","priority":"urgent","externalRef":"INC-1"}'
    # send the same command again: same ticket, header Idempotent-Replayed: true
    curl -s $BASE/v1/idempotency-keys/demo-1 -H "Authorization: Bearer \$TICKETS_API_KEY"
    curl -s "$BASE/v1/tickets?externalRef=INC-1" -H "Authorization: Bearer \$TICKETS_API_KEY"

  Ctrl-C stops the API, the consumer and the sink (the Kafka broker keeps running: npm run kafka:down).

TXT
wait -n "${pids[@]}"
