#!/usr/bin/env bash
# `npm start`: the whole system for a newcomer on a fresh machine. Installs what is missing, uses
# DATABASE_URL or the local PostgreSQL (or docker compose where Docker exists), brings up Kafka,
# migrates, creates a demo tenant, prints its API key and example curl commands, then runs the API
# (with the outbox relay inside, and its ops console), the notification consumer, the statistics consumer and (without NOTIFY_WEBHOOK_URL) a local
# webhook sink that prints each delivery, until Ctrl-C; a process that exits on its own is restarted.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# Every port the processes below listen on, checked before anything slow (install, build, migrate):
# a second npm start, or anything else on one of them, fails here naming all the taken ones at once.
export PORT="${PORT:-3000}"
# Log lines for a person when this terminal shows them (the children's stdout may be a pipe): else JSON.
if [ -t 1 ]; then export LOG_FORMAT="${LOG_FORMAT:-pretty}"; fi
# The ops console (a second listener of the API, loopback only).
export ADMIN_PORT="${ADMIN_PORT:-3001}"
[ -n "${NOTIFY_WEBHOOK_URL:-}" ] || export WEBHOOK_SINK_PORT="${WEBHOOK_SINK_PORT:-3999}"
check_ports() {
  # variable, default, what listens there
  local wanted=(
    "PORT|3000|the API"
    "ADMIN_PORT|3001|the ops console"
    "NOTIFIER_METRICS_PORT|9465|the notification consumer's /metrics"
    "EVENT_CONSUMER_METRICS_PORT|9464|the statistics consumer's /metrics"
  )
  [ -z "${WEBHOOK_SINK_PORT:-}" ] || wanted+=("WEBHOOK_SINK_PORT|3999|the local webhook sink")
  local entry var def what port taken=() fix="" used=() free
  for entry in "${wanted[@]}"; do
    IFS='|' read -r var def what <<<"$entry"
    port="${!var:-$def}"
    used+=("$port")
  done
  for entry in "${wanted[@]}"; do
    IFS='|' read -r var def what <<<"$entry"
    port="${!var:-$def}"
    # 0: any free port, -1: no listener (the metrics endpoints).
    [[ "$port" =~ ^[1-9][0-9]*$ ]] || continue
    port_open 127.0.0.1 "$port" || continue
    # Proposes the next port that is free and not wanted by another process here.
    free=$((port + 10))
    while port_open 127.0.0.1 "$free" || [[ " ${used[*]} " == *" $free "* ]]; do free=$((free + 1)); done
    used+=("$free")
    taken+=("$(printf '    %-5s %-38s move it with %s=%s' "$port" "$what" "$var" "$free")")
    fix+="$var=$free "
  done
  [ ${#taken[@]} -eq 0 ] && return 0
  local IFS=$'\n'
  die "ports npm start needs are already in use (an earlier npm start still running? Ctrl-C it first):
${taken[*]}
  or run: ${fix}npm start"
}

check_ports
require_node
use_database_url
ensure_postgres "$DATABASE_URL"
install_deps
ensure_kafka
cap_malloc_arenas
build
say "migrating $(mask_url "$DATABASE_URL")"
node scripts/db-migrate.mjs deploy

# A fresh admin token for the ops console per start unless ADMIN_TOKEN is set.
export ADMIN_TOKEN="${ADMIN_TOKEN:-$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')}"

say "creating the demo tenant's API key (the previous start's is revoked)"
KEY_JSON=$(node apps/cli/dist/main.js api-keys create --tenant demo --label npm-start --replace --json)
API_KEY=$(node -pe 'JSON.parse(process.argv[1]).apiKey' "$KEY_JSON")
BASE="http://127.0.0.1:$PORT"
# The "Try it" commands below use a key and an externalRef of this start: on a database that already
# holds earlier tries, the first send creates a ticket and the second replays it.
TRY_ID="try-$(date -u +%Y%m%d-%H%M%S)"

# Each process runs under supervise (scripts/lib.sh): one that exits on its own is restarted, with a line
# naming it and its exit code or signal. Ctrl-C (or SIGTERM, or SIGHUP from a closed terminal) sends SIGTERM to every supervisor, which
# passes it on and waits for the graceful stop (the relay releases its lock, the consumer commits and
# leaves its group, the dispatcher releases its leases), then exits.
pids=()
cleanup() {
  trap - INT TERM HUP EXIT
  say "stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM HUP EXIT

supervise api node --max-old-space-size=192 --max-semi-space-size=8 --concurrent-turbofan-max-threads=1 apps/ticket-api/dist/main.js &
pids+=($!)
SINK_NOTE="NOTIFY_WEBHOOK_URL=$(mask_url "${NOTIFY_WEBHOOK_URL:-}")"
if [ -z "${NOTIFY_WEBHOOK_URL:-}" ]; then
  # No webhook target configured: deliver to a local sink that prints each notification.
  export WEBHOOK_SINK_PORT="${WEBHOOK_SINK_PORT:-3999}"
  export NOTIFY_WEBHOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
  export NOTIFY_WEBHOOK_URL="http://127.0.0.1:$WEBHOOK_SINK_PORT/webhooks"
  supervise webhook-sink node dist/scripts/webhook-sink.js &
  pids+=($!)
  SINK_NOTE="a local sink that prints each delivery below ($NOTIFY_WEBHOOK_URL; set NOTIFY_WEBHOOK_URL/SECRET for your own)"
fi
supervise consumer node --max-old-space-size=192 --max-semi-space-size=8 --heap-growing-percent=100 --concurrent-turbofan-max-threads=1 apps/consumer/dist/main.js &
pids+=($!)
# The statistics projection behind GET /v1/stats (a second consumer group on the same topic).
supervise stats node --max-old-space-size=192 --max-semi-space-size=16 --concurrent-turbofan-max-threads=1 apps/stats-consumer/dist/main.js &
pids+=($!)

ready=0
for _ in $(seq 1 60); do
  curl -fsS "$BASE/health/ready" >/dev/null 2>&1 && { ready=1; break; }
  sleep 0.5
done
[ "$ready" = 1 ] || say "the API is not ready after 30 s (its log is above); it is restarted while it keeps exiting"

cat <<TXT

  The ticket service is up.
    API        $BASE        (docs: $BASE/docs, OpenAPI: $BASE/openapi.json, metrics: $BASE/metrics from this host, or with METRICS_TOKEN)
    tenant     demo
    API key    $API_KEY
    webhooks   $SINK_NOTE
    console    http://${ADMIN_HOST:-127.0.0.1}:$ADMIN_PORT   (ops console; log in with the admin token $ADMIN_TOKEN)

  Try it:
    export TICKETS_API_KEY=$API_KEY
    curl -si -X POST $BASE/v1/tickets \\
      -H "Authorization: Bearer \$TICKETS_API_KEY" -H 'Idempotency-Key: "$TRY_ID"' \\
      -H 'Content-Type: application/json' -d '{"title":"Printer on fire","priority":"urgent","externalRef":"INC-$TRY_ID"}'
    # send the same command again: the same ticket, and the header Idempotent-Replayed: true (-i shows headers)
    curl -s $BASE/v1/idempotency-keys/$TRY_ID -H "Authorization: Bearer \$TICKETS_API_KEY"
    curl -s "$BASE/v1/tickets?externalRef=INC-$TRY_ID" -H "Authorization: Bearer \$TICKETS_API_KEY"
    curl -s $BASE/v1/stats -H "Authorization: Bearer \$TICKETS_API_KEY"   # counts from the statistics consumer

  A process that exits on its own is restarted (a line names it and its exit code or signal).
  Ctrl-C stops the API, the consumers and the sink gracefully (the Kafka broker keeps running: npm run kafka:down).

TXT
# The supervisors run until Ctrl-C.
wait
