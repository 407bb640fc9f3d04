#!/usr/bin/env bash
# Apache Kafka in KRaft mode without Docker: one broker (the default) or a cluster of N nodes, each a
# combined broker+controller and all of them voters.
#
#   scripts/kafka/kafka.sh up [--brokers N]         start (nodes that already answer are left alone)
#   scripts/kafka/kafka.sh down                     stop what 'up' started on KAFKA_PORT, one broker or a cluster
#                                                   (SIGTERM to every node, SIGKILL after 30 s)
#   scripts/kafka/kafka.sh status [--brokers N]     "up" / "down" per node (exit 0 when all are up)
#   scripts/kafka/kafka.sh bootstrap [--brokers N]  the client bootstrap list (host:port,...)
#
# Without --brokers (and KAFKA_BROKER_COUNT), a cluster that runs on KAFKA_PORT is found from its pid
# files, so 'status', 'bootstrap' and 'up' speak of it. 'up' of a cluster returns once every node is
# registered: each node's metadata lists all N brokers, so a topic created next gets all its replicas.
#
# The broker jars come from Maven Central via scripts/kafka/pom.xml (mvn dependency:copy-dependencies),
# cached in .cache/kafka/<version>/libs. Everything lives under .cache/kafka (git-ignored).
#
# Environment overrides:
#   KAFKA_BROKER_COUNT     nodes (default 1; `--brokers N` wins). 1 keeps the single-broker layout.
#   KAFKA_VERSION          Kafka version (default 3.9.2)
#   KAFKA_HOME_DIR         jar cache, and the single broker's state (default <repo>/.cache/kafka; a single
#                          broker on a KAFKA_PORT other than 9092 keeps its state in broker-<KAFKA_PORT>/)
#   KAFKA_JARS_DIR         the broker jars (default $KAFKA_HOME_DIR/<version>/libs; fetched when missing)
#   KAFKA_PORT             PLAINTEXT port of node 1 on 127.0.0.1 (default 9092); node i: KAFKA_PORT+i-1
#   KAFKA_CONTROLLER_PORT  KRaft controller port of node 1 (default KAFKA_PORT+1 for one broker,
#                          KAFKA_PORT+100 for a cluster); node i: KAFKA_CONTROLLER_PORT+i-1
#   KAFKA_DATA_DIR         one broker: its log.dirs (default <its state dir>/data/<version>)
#   KAFKA_CLUSTER_DIR      a cluster: config, pid, log and data of node i under node-<i>/
#                          (default $KAFKA_HOME_DIR/cluster-<KAFKA_PORT>/<version>)
#   KAFKA_HEAP_OPTS        JVM heap per node (default "-Xmx512m -Xms512m"; a cluster "-Xmx384m -Xms384m")
#   KAFKA_START_TIMEOUT    seconds to wait for readiness (default 90)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

COMMAND="${1:-}"
[[ $# -gt 0 ]] && shift
BROKERS="${KAFKA_BROKER_COUNT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --brokers) BROKERS="${2:-}"; shift 2 ;;
    --brokers=*) BROKERS="${1#--brokers=}"; shift ;;
    *) echo "[kafka] unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ -z "$BROKERS" || "$BROKERS" =~ ^[1-9][0-9]?$ ]] || { echo "[kafka] --brokers / KAFKA_BROKER_COUNT must be 1-99, got '$BROKERS'" >&2; exit 2; }

KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
KAFKA_HOME_DIR="${KAFKA_HOME_DIR:-$REPO_ROOT/.cache/kafka}"
KAFKA_HOST="127.0.0.1"
KAFKA_PORT="${KAFKA_PORT:-9092}"
[[ "$KAFKA_PORT" =~ ^[0-9]+$ ]] || { echo "[kafka] KAFKA_PORT must be a port number, got '$KAFKA_PORT'" >&2; exit 2; }
# The single broker's pid file, log and config: the default port keeps the layout it always had; any
# other port gets a directory of its own, so a 'down' on another port never finds the default broker's pid.
if [[ "$KAFKA_PORT" -eq 9092 ]]; then SINGLE_DIR="$KAFKA_HOME_DIR"; else SINGLE_DIR="$KAFKA_HOME_DIR/broker-$KAFKA_PORT"; fi
KAFKA_CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$KAFKA_HOME_DIR/cluster-$KAFKA_PORT/$KAFKA_VERSION}"

# Pid from pid file $1 if that process is alive and is the Kafka broker of config file $2; empty otherwise.
running_pid() {
  [[ -f "$1" ]] || return 0
  local pid
  pid="$(tr -dc '0-9' <"$1")"
  [[ -n "$pid" ]] || return 0
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "kafka.Kafka $2"; then
    echo "$pid"
  fi
}

# Node numbers of the cluster in KAFKA_CLUSTER_DIR (1 .. the highest node-<i> dir), nothing without one.
cluster_nodes() {
  local i n=0 d
  for d in "$KAFKA_CLUSTER_DIR"/node-*; do
    [[ -d "$d" ]] || continue
    i="${d##*/node-}"
    if [[ "$i" =~ ^[0-9]+$ ]] && ((i > n)); then n="$i"; fi
  done
  ((n > 0)) && seq 1 "$n"
  return 0
}

# Without --brokers: the size of the cluster whose nodes run from KAFKA_CLUSTER_DIR, else 1.
if [[ -z "$BROKERS" ]]; then
  BROKERS=1
  for i in $(cluster_nodes); do
    if [[ -n "$(running_pid "$KAFKA_CLUSTER_DIR/node-$i/kafka.pid" "$KAFKA_CLUSTER_DIR/node-$i/config/server.properties")" ]]; then
      BROKERS="$(cluster_nodes | tail -n1)"
      break
    fi
  done
fi
if [[ "$BROKERS" -eq 1 ]]; then
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
  KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m}"
else
  # A cluster's client ports are consecutive (KAFKA_PORT ... +N-1), so its controllers sit 100 above.
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 100))}"
  KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx384m -Xms384m}"
fi
KAFKA_DATA_DIR="${KAFKA_DATA_DIR:-$SINGLE_DIR/data/$KAFKA_VERSION}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

LIBS_DIR="${KAFKA_JARS_DIR:-$KAFKA_HOME_DIR/$KAFKA_VERSION/libs}"
POM="$SCRIPT_DIR/pom.xml"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
MAJOR="${KAFKA_VERSION%%.*}"
if [[ "$BROKERS" -eq 1 ]]; then
  STATE_DIR="$SINGLE_DIR"
  TOOLS_CONF_DIR="$SINGLE_DIR/$KAFKA_VERSION/config"
else
  STATE_DIR="$KAFKA_CLUSTER_DIR"
  TOOLS_CONF_DIR="$KAFKA_CLUSTER_DIR/tools"
fi
REPLICAS=$((BROKERS < 3 ? BROKERS : 3))
MIN_ISR=$((BROKERS < 3 ? 1 : 2))

log() { echo "[kafka] $*"; }
die() { echo "[kafka] ERROR: $*" >&2; exit 1; }

# Sets NODE_ID, NODE_PORT, NODE_CONTROLLER_PORT, NODE_DATA_DIR, NODE_CONF_DIR, NODE_PID_FILE and
# NODE_LOG_FILE for node $1 (1-based); $2 (default $BROKERS) picks the layout, one broker or a cluster.
# One broker on 9092 keeps the paths it always had.
node_vars() {
  NODE_ID="$1"
  NODE_PORT=$((KAFKA_PORT + $1 - 1))
  NODE_CONTROLLER_PORT=$((KAFKA_CONTROLLER_PORT + $1 - 1))
  if [[ "${2:-$BROKERS}" -eq 1 ]]; then
    NODE_DATA_DIR="$KAFKA_DATA_DIR"
    NODE_CONF_DIR="$SINGLE_DIR/$KAFKA_VERSION/config"
    NODE_PID_FILE="$SINGLE_DIR/kafka.pid"
    NODE_LOG_FILE="$SINGLE_DIR/kafka.log"
  else
    NODE_DATA_DIR="$KAFKA_CLUSTER_DIR/node-$1/data"
    NODE_CONF_DIR="$KAFKA_CLUSTER_DIR/node-$1/config"
    NODE_PID_FILE="$KAFKA_CLUSTER_DIR/node-$1/kafka.pid"
    NODE_LOG_FILE="$KAFKA_CLUSTER_DIR/node-$1/kafka.log"
  fi
}

voters() {
  local i out=""
  for i in $(seq 1 "$BROKERS"); do
    out+="${out:+,}$i@$KAFKA_HOST:$((KAFKA_CONTROLLER_PORT + i - 1))"
  done
  echo "$out"
}

bootstrap() {
  local i out=""
  for i in $(seq 1 "$BROKERS"); do out+="${out:+,}$KAFKA_HOST:$((KAFKA_PORT + i - 1))"; done
  echo "$out"
}

# True when something accepts TCP connections on host:port (no Java, no nc needed).
port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

# The node selected by node_vars: its JVM's pid when alive, empty otherwise.
node_pid() {
  running_pid "$NODE_PID_FILE" "$NODE_CONF_DIR/server.properties"
}

# How many brokers the metadata of host $1 port $2 lists (a Metadata v4 request for no topics, written
# and read with bash alone); empty when it does not answer. The count is of registered, unfenced brokers.
registered_brokers() {
  local bytes
  # 4-byte size (23), api key 3 (Metadata), version 4, correlation id 1, client id "kafka.sh",
  # topics: empty array, allow_auto_topic_creation false. The answer starts with size, correlation id,
  # throttle time and the broker count, 4 bytes each.
  bytes=$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x00\x00\x00\x17\x00\x03\x00\x04\x00\x00\x00\x01\x00\x08kafka.sh\x00\x00\x00\x00\x00" >&3
    head -c 16 <&3 | od -An -tu1 -v
  ' "$1" "$2" 2>/dev/null) || return 0
  # shellcheck disable=SC2086
  set -- $bytes
  [[ $# -eq 16 && "$8" -eq 1 ]] || return 0
  echo $(((${13} << 24) | (${14} << 16) | (${15} << 8) | ${16}))
}

fetch_jars() {
  if [[ -f "$LIBS_DIR/.complete" ]]; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found (needed once to fetch the Kafka $KAFKA_VERSION jars)"
  local profile="kafka3"
  [[ "$MAJOR" -ge 4 ]] && profile="kafka4"
  local tmp="$LIBS_DIR.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  log "fetching Kafka $KAFKA_VERSION jars from Maven Central into $LIBS_DIR (one-time) ..."
  local t0=$SECONDS
  local mvn_log="$KAFKA_HOME_DIR/mvn.log"
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -P "$profile" -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
    tail -n 40 "$mvn_log" >&2 || true
    rm -rf "$tmp"
    die "mvn could not fetch the Kafka $KAFKA_VERSION jars, see $mvn_log"
  fi
  [[ -n "$(ls "$tmp"/kafka_2.13-*.jar 2>/dev/null)" ]] || { rm -rf "$tmp"; die "kafka_2.13 jar missing after mvn"; }
  rm -rf "$LIBS_DIR"
  mv "$tmp" "$LIBS_DIR"
  touch "$LIBS_DIR/.complete"
  log "jars ready ($(find "$LIBS_DIR" -name "*.jar" | wc -l) jars, $((SECONDS - t0)) s)"
}

# server.properties of the node selected by node_vars. On a cluster, topics get min(3, N) replicas and
# min.insync.replicas 2, so an acks=all write survives one broker down; unclean election stays off.
write_node_config() {
  mkdir -p "$NODE_CONF_DIR" "$NODE_DATA_DIR"
  cat >"$NODE_CONF_DIR/server.properties" <<EOF
# Generated by scripts/kafka/kafka.sh -- edits are overwritten on every 'up'.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://$KAFKA_HOST:$NODE_PORT,CONTROLLER://$KAFKA_HOST:$NODE_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$NODE_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$NODE_DATA_DIR
num.partitions=6
default.replication.factor=$REPLICAS
min.insync.replicas=$MIN_ISR
offsets.topic.replication.factor=$REPLICAS
transaction.state.log.replication.factor=$REPLICAS
transaction.state.log.min.isr=$MIN_ISR
unclean.leader.election.enable=false
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
num.network.threads=3
num.io.threads=4
EOF
  if [[ "$MAJOR" -ge 4 ]]; then
    cat >>"$NODE_CONF_DIR/server.properties" <<EOF
share.coordinator.state.topic.replication.factor=$REPLICAS
share.coordinator.state.topic.min.isr=$MIN_ISR
EOF
  fi
  write_log_config "$NODE_CONF_DIR"
}

# log4j configs into dir $1. Kafka 3.x logs through reload4j (log4j 1.x config), Kafka 4.x through
# log4j2. Both go to stdout, which is redirected into the node's kafka.log.
write_log_config() {
  mkdir -p "$1"
  cat >"$1/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
  cat >"$1/log4j2.properties" <<'EOF'
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
  # Command-line tools (StorageTool): warnings only, to stderr.
  cat >"$1/tools-log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
EOF
  cat >"$1/tools-log4j2.properties" <<'EOF'
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
EOF
}

# $1: config dir; $2: "" for the broker, "tools-" for command-line tools (StorageTool)
jvm_log_opts() {
  if [[ "$MAJOR" -ge 4 ]]; then
    echo "-Dlog4j2.configurationFile=file:$1/${2:-}log4j2.properties"
  else
    echo "-Dlog4j.configuration=file:$1/${2:-}log4j.properties"
  fi
}

# The cluster id every node is formatted with: generated once, kept in the state dir.
cluster_id() {
  local file="$STATE_DIR/cluster.id"
  if [[ ! -s "$file" ]]; then
    write_log_config "$TOOLS_CONF_DIR"
    local id
    # shellcheck disable=SC2046
    id="$("$JAVA" $(jvm_log_opts "$TOOLS_CONF_DIR" tools-) -cp "$LIBS_DIR/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)"
    [[ -n "$id" ]] || die "could not generate a cluster id with kafka.tools.StorageTool"
    echo "$id" >"$file"
  fi
  cat "$file"
}

format_node_storage() {
  if [[ -f "$NODE_DATA_DIR/meta.properties" ]]; then
    return 0
  fi
  local id
  id="$(cluster_id)"
  log "formatting storage of node $NODE_ID in $NODE_DATA_DIR (cluster id $id) ..."
  # shellcheck disable=SC2046
  "$JAVA" $(jvm_log_opts "$NODE_CONF_DIR" tools-) -cp "$LIBS_DIR/*" kafka.tools.StorageTool format \
      -t "$id" -c "$NODE_CONF_DIR/server.properties" --ignore-formatted >>"$STATE_DIR/format.log" 2>&1 \
    || die "storage format failed, see $STATE_DIR/format.log"
}

start_node() {
  [[ -f "$NODE_LOG_FILE" ]] && mv -f "$NODE_LOG_FILE" "$NODE_LOG_FILE.prev"
  : >"$NODE_LOG_FILE"
  rm -f "$NODE_PID_FILE"
  local launcher=()
  command -v setsid >/dev/null 2>&1 && launcher=(setsid)
  # The inner bash writes its own pid and then execs java, so the pid file holds the JVM's pid.
  # setsid detaches the broker from the caller's process group/terminal.
  # shellcheck disable=SC2046,SC2086
  # shellcheck disable=SC2016
  nohup "${launcher[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' kafka-launch "$NODE_PID_FILE" \
    "$JAVA" $KAFKA_HEAP_OPTS \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
    $(jvm_log_opts "$NODE_CONF_DIR") -Dkafka.logs.dir="$(dirname "$NODE_LOG_FILE")" \
    -cp "$LIBS_DIR/*" kafka.Kafka "$NODE_CONF_DIR/server.properties" \
    </dev/null >>"$NODE_LOG_FILE" 2>&1 9>&- &
  # wait for the pid file written by the launcher
  for _ in $(seq 1 50); do
    [[ -s "$NODE_PID_FILE" ]] && break
    sleep 0.1
  done
}

# Waits until every node in $@ (node numbers) logged "Kafka Server started" and accepts connections.
# The nodes of a cluster only finish starting once a quorum of voters is up, so they are awaited together.
wait_ready() {
  local t0=$SECONDS deadline=$((SECONDS + KAFKA_START_TIMEOUT)) pending=("$@") left i pid
  while ((SECONDS < deadline)); do
    left=()
    for i in "${pending[@]}"; do
      node_vars "$i"
      pid="$(node_pid)"
      if [[ -z "$pid" ]]; then
        echo "----- last lines of $NODE_LOG_FILE -----" >&2
        tail -n 30 "$NODE_LOG_FILE" >&2 || true
        rm -f "$NODE_PID_FILE"
        die "Kafka node $i exited during startup, see $NODE_LOG_FILE"
      fi
      if grep -q 'Kafka Server started' "$NODE_LOG_FILE" 2>/dev/null && port_open "$KAFKA_HOST" "$NODE_PORT"; then
        log "Kafka $KAFKA_VERSION $( ((BROKERS > 1)) && echo "node $i " )is up on $KAFKA_HOST:$NODE_PORT (pid $pid, ready in $((SECONDS - t0)) s, log $NODE_LOG_FILE)"
      else
        left+=("$i")
      fi
    done
    [[ ${#left[@]} -eq 0 ]] && return 0
    pending=("${left[@]}")
    sleep 0.5
  done
  for i in "${pending[@]}"; do
    node_vars "$i"
    echo "----- last lines of $NODE_LOG_FILE -----" >&2
    tail -n 30 "$NODE_LOG_FILE" >&2 || true
  done
  die "Kafka node(s) ${pending[*]} not ready after ${KAFKA_START_TIMEOUT}s (left running; 'kafka.sh down' stops them)"
}

cmd_up() {
  mkdir -p "$KAFKA_HOME_DIR" "$STATE_DIR"
  # Serialise concurrent 'up's (e.g. parallel test setups): a second caller waits until the first one
  # has ready brokers, then finds the ports open. The brokers run with fd 9 closed so they do not keep
  # holding the lock.
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$STATE_DIR/.up.lock"
    flock 9
  fi
  local i pid t0=$SECONDS to_start=() to_wait=()
  for i in $(seq 1 "$BROKERS"); do
    node_vars "$i"
    if port_open "$KAFKA_HOST" "$NODE_PORT"; then
      if [[ "$BROKERS" -eq 1 ]]; then
        log "something already answers on $KAFKA_HOST:$NODE_PORT; nothing to do"
      else
        log "something already answers on $KAFKA_HOST:$NODE_PORT; nothing to do for node $i"
      fi
      continue
    fi
    pid="$(node_pid)"
    if [[ -n "$pid" ]]; then
      log "node $i (pid $pid) is already starting; waiting for it"
      to_wait+=("$i")
      continue
    fi
    if port_open "$KAFKA_HOST" "$NODE_CONTROLLER_PORT"; then
      die "controller port $KAFKA_HOST:$NODE_CONTROLLER_PORT of node $i is already taken (set KAFKA_CONTROLLER_PORT)"
    fi
    to_start+=("$i")
  done
  if [[ ${#to_start[@]} -gt 0 ]]; then
    command -v "$JAVA" >/dev/null 2>&1 || die "java not found (need Java 17+)"
    fetch_jars
    t0=$SECONDS
    for i in "${to_start[@]}"; do
      node_vars "$i"
      write_node_config
      format_node_storage
      log "starting Kafka $KAFKA_VERSION (KRaft, node.id=$i$( ((BROKERS > 1)) && echo " of $BROKERS" )) on $KAFKA_HOST:$NODE_PORT, data in $NODE_DATA_DIR ..."
      start_node
      pid="$(node_pid)"
      if [[ -z "$pid" ]]; then
        tail -n 30 "$NODE_LOG_FILE" >&2 || true
        die "Kafka node $i failed to start, see $NODE_LOG_FILE"
      fi
      to_wait+=("$i")
    done
    log "waiting up to ${KAFKA_START_TIMEOUT}s for readiness ..."
  fi
  if [[ ${#to_wait[@]} -gt 0 ]]; then
    wait_ready "${to_wait[@]}"
  fi
  if [[ "$BROKERS" -gt 1 ]]; then
    wait_registered
    if [[ ${#to_start[@]} -gt 0 ]]; then
      log "$BROKERS-node cluster ready $((SECONDS - t0)) s after the first start; bootstrap $(bootstrap)"
    fi
  fi
  return 0
}

# A node answers, and logs "Kafka Server started", before the others are in its metadata: a client
# connecting then sees fewer brokers, and a topic it creates may get fewer replicas than the cluster
# has. Waits until the metadata of every node lists all $BROKERS brokers.
wait_registered() {
  local deadline=$((SECONDS + KAFKA_START_TIMEOUT)) i n pending
  while :; do
    pending=()
    for i in $(seq 1 "$BROKERS"); do
      n="$(registered_brokers "$KAFKA_HOST" $((KAFKA_PORT + i - 1)))"
      [[ "$n" == "$BROKERS" ]] || pending+=("node $i lists ${n:-no} broker(s)")
    done
    if [[ ${#pending[@]} -eq 0 ]]; then
      log "every node's metadata lists all $BROKERS brokers"
      return 0
    fi
    ((SECONDS < deadline)) || break
    sleep 0.5
  done
  die "the cluster is not complete after ${KAFKA_START_TIMEOUT}s: $(IFS=','; echo "${pending[*]}") of $BROKERS; see the nodes' kafka.log under $KAFKA_CLUSTER_DIR (left running; 'kafka.sh down' stops them)"
}

# Stops what 'up' started on KAFKA_PORT, whatever --brokers says: the single broker of this port and
# every node-<i> of KAFKA_CLUSTER_DIR whose pid file names a live JVM started with that node's config.
# A broker this script did not start (another checkout's, docker's) is left alone.
cmd_down() {
  local i pid pids=() files=() alive foreign=()
  node_vars 1 1
  if pid="$(node_pid)" && [[ -n "$pid" ]]; then
    log "stopping Kafka on $KAFKA_HOST:$NODE_PORT (pid $pid) ..."
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
    files+=("$NODE_PID_FILE")
  fi
  for i in $(cluster_nodes); do
    node_vars "$i" 2
    pid="$(node_pid)"
    [[ -n "$pid" ]] || continue
    log "stopping Kafka node $i (pid $pid, $KAFKA_HOST:$NODE_PORT) ..."
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
    files+=("$NODE_PID_FILE")
  done
  if [[ ${#pids[@]} -eq 0 ]]; then
    for i in $(seq 1 "$BROKERS"); do
      port_open "$KAFKA_HOST" $((KAFKA_PORT + i - 1)) && foreign+=("$KAFKA_HOST:$((KAFKA_PORT + i - 1))")
    done
    if [[ ${#foreign[@]} -gt 0 ]]; then
      log "nothing started by this script runs on KAFKA_PORT=$KAFKA_PORT (no live pid under $SINGLE_DIR or $KAFKA_CLUSTER_DIR), but ${foreign[*]} answers: leaving it alone (started from another checkout, KAFKA_HOME_DIR or KAFKA_CLUSTER_DIR, or by docker compose: stop it there)"
    else
      log "not running"
    fi
    return 0
  fi
  # Every node gets SIGTERM at once: stopped one after another, the last ones would wait for a quorum.
  for _ in $(seq 1 60); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still running after 30 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sleep 0.2
  rm -f "${files[@]}"
  log "stopped (${#pids[@]} node(s))"
}

cmd_status() {
  local i pid who rc=0
  for i in $(seq 1 "$BROKERS"); do
    node_vars "$i"
    pid="$(node_pid)"
    who=""
    [[ "$BROKERS" -gt 1 ]] && who="node $i: "
    if port_open "$KAFKA_HOST" "$NODE_PORT"; then
      if [[ -n "$pid" ]]; then
        echo "${who}up ($KAFKA_HOST:$NODE_PORT, pid $pid)"
      else
        echo "${who}up ($KAFKA_HOST:$NODE_PORT, not started by this script)"
      fi
      continue
    fi
    rc=1
    if [[ -n "$pid" ]]; then
      echo "${who}down (pid $pid is alive but $KAFKA_HOST:$NODE_PORT does not answer yet: starting or stuck, see $NODE_LOG_FILE)"
    else
      echo "${who}down"
    fi
  done
  return $rc
}

case "$COMMAND" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  bootstrap) bootstrap ;;
  *)
    echo "usage: $0 up|down|status|bootstrap [--brokers N]" >&2
    exit 2
    ;;
esac
