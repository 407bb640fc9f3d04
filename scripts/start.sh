#!/usr/bin/env bash
# `npm start`: the whole system for a newcomer on a fresh machine. Installs what is missing, uses
# DATABASE_URL or the local PostgreSQL (or docker compose where Docker exists), brings up Kafka,
# migrates, creates a demo tenant, prints its API key and example curl commands, then runs the API
# (with the outbox relay inside, and its ops console), the notification consumer, the statistics consumer and (without NOTIFY_WEBHOOK_URL) a local
# webhook sink that prints each delivery, until Ctrl-C; a process that exits on its own is restarted.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

require_node
install_deps
use_database_url
export PORT="${PORT:-3000}"
# Log lines for a person when this terminal shows them (the children's stdout may be a pipe): else JSON.
if [ -t 1 ]; then export LOG_FORMAT="${LOG_FORMAT:-pretty}"; fi
ensure_postgres "$DATABASE_URL"
ensure_kafka
build
say "migrating $DATABASE_URL"
node scripts/db-migrate.mjs deploy

if port_open 127.0.0.1 "$PORT"; then
  die "port $PORT is already in use (an API from an earlier npm start?). Stop it, or run PORT=3002 npm start."
fi
# The ops console (a second listener of the API, loopback only): a fresh admin token per start unless ADMIN_TOKEN is set.
export ADMIN_PORT="${ADMIN_PORT:-3001}"
export ADMIN_TOKEN="${ADMIN_TOKEN:-$(head -c 24 /dev/urandom | base64 | tr '+/' '-_')}"
if port_open 127.0.0.1 "$ADMIN_PORT"; then
  die "port $ADMIN_PORT (the ops console) is already in use. Stop what uses it, or run ADMIN_PORT=3011 npm start."
fi

say "creating the demo tenant's API key"
KEY_JSON=$(node apps/cli/dist/main.js api-keys create --tenant demo --json)
API_KEY=$(node -pe 'JSON.parse(process.argv[1]).apiKey' "$KEY_JSON")
BASE="http://127.0.0.1:$PORT"

# Each process runs under a supervisor: one that exits on its own (a crash, an uncaught error) is
# restarted after a backoff (1 s doubling to 30 s; back to 1 s once it ran for a minute), with a line
# naming it and its exit code. Ctrl-C (or SIGTERM) sends SIGTERM to every process, waits for their
# graceful stops (the relay releases its lock, the consumer commits and leaves its group, the
# dispatcher releases its leases), then exits.
RESTART_MAX_DELAY=30
supervise() {
  local name=$1 child='' code delay=1 started stopping=0
  shift
  # The child runs in a process group of its own (job control on: set -m), so Ctrl-C, which reaches
  # the terminal's whole foreground group, does not reach it: the supervisor only notes the SIGINT,
  # and the child gets exactly one signal, the SIGTERM that the cleanup below sends and the supervisor
  # passes on (a second signal would cut the child's graceful stop short).
  set -m
  trap 'stopping=1' INT
  trap 'stopping=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true' TERM
  while :; do
    started=$SECONDS
    "$@" &
    child=$!
    while :; do
      wait "$child" && code=0 || code=$?
      kill -0 "$child" 2>/dev/null || break # a trap cut the wait short; the child is still stopping
    done
    child=''
    [ "$stopping" = 0 ] || exit 0
    if (( SECONDS - started >= 60 )); then delay=1; fi
    say "$name exited with code $code; restarting it in ${delay}s"
    sleep "$delay" &
    child=$!
    wait "$child" || true
    child=''
    [ "$stopping" = 0 ] || exit 0
    delay=$(( delay * 2 > RESTART_MAX_DELAY ? RESTART_MAX_DELAY : delay * 2 ))
  done
}

pids=()
cleanup() {
  trap - INT TERM EXIT
  say "stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

supervise api node --max-old-space-size=192 --max-semi-space-size=8 apps/ticket-api/dist/main.js &
pids+=($!)
SINK_NOTE="NOTIFY_WEBHOOK_URL=${NOTIFY_WEBHOOK_URL:-}"
if [ -z "${NOTIFY_WEBHOOK_URL:-}" ]; then
  # No webhook target configured: deliver to a local sink that prints each notification.
  export WEBHOOK_SINK_PORT="${WEBHOOK_SINK_PORT:-3999}"
  export NOTIFY_WEBHOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
  export NOTIFY_WEBHOOK_URL="http://127.0.0.1:$WEBHOOK_SINK_PORT/webhooks"
  supervise webhook-sink node dist/scripts/webhook-sink.js &
  pids+=($!)
  SINK_NOTE="a local sink that prints each delivery below ($NOTIFY_WEBHOOK_URL; set NOTIFY_WEBHOOK_URL/SECRET for your own)"
fi
supervise consumer node --max-old-space-size=192 --max-semi-space-size=16 apps/consumer/dist/main.js &
pids+=($!)
# The statistics projection behind GET /v1/stats (a second consumer group on the same topic).
supervise stats node --max-old-space-size=192 --max-semi-space-size=16 apps/stats-consumer/dist/main.js &
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
    curl -s -X POST $BASE/v1/tickets \\
      -H "Authorization: Bearer \$TICKETS_API_KEY" -H 'Idempotency-Key: "demo-1"' \\
      -H 'Content-Type: application/json' -d '{"title":"Printer on fire","priority":"urgent","externalRef":"INC-1"}'
    # send the same command again: same ticket, header Idempotent-Replayed: true
    curl -s $BASE/v1/idempotency-keys/demo-1 -H "Authorization: Bearer \$TICKETS_API_KEY"
    curl -s "$BASE/v1/tickets?externalRef=INC-1" -H "Authorization: Bearer \$TICKETS_API_KEY"
    curl -s $BASE/v1/stats -H "Authorization: Bearer \$TICKETS_API_KEY"   # counts from the statistics consumer

  A process that exits on its own is restarted (a line names it and its exit code).
  Ctrl-C stops the API, the consumers and the sink gracefully (the Kafka broker keeps running: npm run kafka:down).

TXT
# The supervisors run until Ctrl-C.
wait
