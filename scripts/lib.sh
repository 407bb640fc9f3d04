# Shared helpers for scripts/start.sh and scripts/test.sh. Sourced, not run.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Bold / red on a terminal; plain text into pipes and log files.
if [ -t 2 ]; then
  say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
  die() { printf '\033[31merror:\033[0m %s\n' "$*" >&2; exit 1; }
else
  say() { printf '==> %s\n' "$*" >&2; }
  die() { printf 'error: %s\n' "$*" >&2; exit 1; }
fi

# glibc's malloc keeps at most two arenas per Node process (the Docker image sets the same). Without the cap,
# each thread that allocates (V8's workers, libuv's pool) gets an arena of its own that keeps what it once
# held: a lower peak RSS at the same CPU (measured in docs/benchmarks.md, "glibc's malloc arenas"). Called
# once the broker and PostgreSQL the scripts may start are up, so only the Node processes get it (measured on
# them only). Set it yourself to override; musl builds ignore it.
cap_malloc_arenas() {
  export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
}

# The URL in $1 with its password replaced by ***: what scripts print of DATABASE_URL and the like.
mask_url() { printf '%s' "$1" | sed -E 's#^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*):[^@/]*@#\1:***@#'; }

# The project runs on the Node.js version pinned in .node-version (TICKETS_NODE_VERSION picks another
# exact version, e.g. CI's Node 22 run). A machine whose Node is older than the pin's major version gets
# the pinned build from the npm registry (the official binaries, package node-<os>-<arch>) in
# .cache/node/, once; every later command here then runs on it. A machine with Node 24+ sees nothing.
# The notice "running on .cache/node/..." is said once per checkout and version, and only to a terminal:
# the CLI's output stays clean in pipes, and nested scripts (npm start -> node.sh) do not repeat it.
require_node() {
  local want have="" have_major=0
  want="${TICKETS_NODE_VERSION:-$(tr -d ' \r\n' <"$ROOT/.node-version")}"
  if command -v node >/dev/null; then have=$(node -p process.versions.node); have_major=${have%%.*}; fi
  if [ -n "${TICKETS_NODE_VERSION:-}" ]; then
    [ "$have" = "$want" ] && return 0
  elif [ "$have_major" -ge "${want%%.*}" ]; then
    return 0
  fi
  local dir="$ROOT/.cache/node/v$want" why="Node ${have:-(none)} is older than the project's $want"
  [ -n "${TICKETS_NODE_VERSION:-}" ] && why="TICKETS_NODE_VERSION=$want"
  if [ -x "$dir/bin/node" ]; then
    if [ -t 2 ] && [ ! -e "$dir/.notice-shown" ]; then
      say "$why: running on .cache/node/v$want/bin/node (said once)"
      : >"$dir/.notice-shown" 2>/dev/null || true
    fi
  else
    say "$why: fetching Node.js $want from the npm registry into .cache/node/ (~50 MB, once) and running on it"
    fetch_node "$want" "$dir"
  fi
  export PATH="$dir/bin:$PATH"
}

fetch_node() {
  local version="$1" dir="$2" os arch tmp
  command -v npm >/dev/null || die "Node.js $version is needed and npm is missing to fetch it. Install Node.js $version (or any 24.x) from nodejs.org."
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) die "no Node.js build on the npm registry for $(uname -s): install Node.js $version yourself." ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) die "no Node.js build on the npm registry for $(uname -m): install Node.js $version yourself." ;; esac
  mkdir -p "$ROOT/.cache/node"
  tmp=$(mktemp -d "$ROOT/.cache/node/.fetch.XXXXXX")
  (cd "$tmp" && npm pack "node-$os-$arch@$version" --silent >/dev/null && tar xzf ./*.tgz package/bin/node) ||
    { rm -rf "$tmp"; die "could not fetch node-$os-$arch@$version from the npm registry (see npm's message above). Install Node.js $version yourself, or try again."; }
  mkdir -p "$tmp/v$version/bin" && mv "$tmp/package/bin/node" "$tmp/v$version/bin/node"
  # Another command may have fetched it meanwhile: keep whichever landed first.
  [ -e "$dir" ] || mv "$tmp/v$version" "$dir"
  rm -rf "$tmp"
  "$dir/bin/node" -v >/dev/null || die "the fetched Node.js at $dir does not run on this machine: install Node.js $version yourself."
}

install_deps() {
  cd "$ROOT"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing npm dependencies (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

# The local development database unless DATABASE_URL names another.
use_database_url() { export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/tickets}"; }

# true when something accepts TCP connections on host:port
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Makes sure PostgreSQL answers at the host:port of the URL in $1; starts the local cluster if it can.
ensure_postgres() {
  local url="$1" hostport host port
  hostport=$(node -e 'const u=new URL(process.argv[1]);console.log(`${u.hostname||"127.0.0.1"} ${u.port||5432}`)' "$url" 2>/dev/null) || die "not a PostgreSQL URL: $(mask_url "$url")"
  read -r host port <<<"$hostport"
  if port_open "$host" "$port"; then return 0; fi
  if [ "$host" = "127.0.0.1" ] || [ "$host" = "localhost" ]; then
    if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
      say "starting the local PostgreSQL cluster"
      for v in $(ls /etc/postgresql); do pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null || true; done
      for _ in $(seq 1 30); do port_open "$host" "$port" && return 0; sleep 1; done
    fi
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
      say "starting PostgreSQL with docker compose"
      (cd "$ROOT" && docker compose up -d postgres)
      for _ in $(seq 1 60); do port_open "$host" "$port" && return 0; sleep 1; done
    fi
  fi
  die "PostgreSQL does not answer at $host:$port. Start it (Debian: pg_ctlcluster 15 main start; Docker: docker compose up -d postgres), or set DATABASE_URL to a reachable server."
}

# Makes sure a Kafka broker answers: KAFKA_BROKERS when set, else the project's own broker on 127.0.0.1:9092.
ensure_kafka() {
  if [ -n "${KAFKA_BROKERS:-}" ]; then
    local first="${KAFKA_BROKERS%%,*}"
    port_open "${first%:*}" "${first##*:}" || die "KAFKA_BROKERS=$KAFKA_BROKERS does not answer."
    return 0
  fi
  if port_open 127.0.0.1 9092; then return 0; fi
  if command -v java >/dev/null && command -v mvn >/dev/null; then
    bash "$ROOT/scripts/kafka/kafka.sh" up
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    say "starting Kafka with docker compose"
    (cd "$ROOT" && docker compose up -d kafka)
    for _ in $(seq 1 90); do port_open 127.0.0.1 9092 && return 0; sleep 1; done
    die "Kafka from docker compose did not answer on 127.0.0.1:9092 within 90 s (docker compose logs kafka)."
  else
    die "No Kafka broker: install Java 17+ and Maven (the project then runs its own broker: npm run kafka:up), use Docker, or set KAFKA_BROKERS."
  fi
}

build() {
  cd "$ROOT"
  say "building (tsc)"
  npm run --silent build
}

# supervise NAME CMD...: runs CMD until the supervisor gets SIGTERM (then CMD gets exactly one SIGTERM
# and is waited for), restarting it whenever it exits on its own, after a backoff (1 s doubling to
# RESTART_MAX_DELAY; back to 1 s once it ran for a minute), with a line naming it and why it ended: its
# exit code, or the signal that ended it (a SIGTERM from outside npm start, the OOM killer's SIGKILL).
# npm start runs each process under one (Ctrl-C sends SIGTERM to every supervisor).
RESTART_MAX_DELAY=${RESTART_MAX_DELAY:-30}
supervise() {
  local name=$1 child='' code delay=1 started stopping=0 passed=0 why
  shift
  # The child runs in a process group of its own (job control on: set -m), so Ctrl-C, which reaches
  # the terminal's whole foreground group, does not reach it: the supervisor only notes the SIGINT,
  # and the child gets exactly one signal, the SIGTERM that npm start's cleanup sends and the supervisor
  # passes on (a second signal would cut the child's graceful stop short). Job control also makes bash
  # print "[1]+ Terminated ..." when a child ends by a signal, which looks like a crash: the waits below
  # send that notice to /dev/null. A closed terminal sends SIGHUP to the foreground group, supervisors
  # included but not their children: the supervisor passes it on as the one SIGTERM (the SIGTERM of npm
  # start's cleanup that follows is not passed again), so the children stop gracefully instead of running on
  # without a supervisor.
  set -m
  trap 'stopping=1' INT
  trap 'stopping=1; if [ "$passed" = 0 ] && [ -n "$child" ]; then passed=1; kill -TERM "$child" 2>/dev/null || true; fi' TERM HUP
  while :; do
    started=$SECONDS
    "$@" &
    child=$!
    while :; do
      wait "$child" 2>/dev/null && code=0 || code=$?
      kill -0 "$child" 2>/dev/null || break # a trap cut the wait short; the child is still stopping
    done
    child=''
    [ "$stopping" = 0 ] || exit 0
    if (( SECONDS - started >= 60 )); then delay=1; fi
    why="exited with code $code"
    if (( code > 128 )) && [ -n "$(kill -l $((code - 128)) 2>/dev/null)" ]; then
      why="was ended by SIG$(kill -l $((code - 128))) from outside npm start (Ctrl-C stops everything)"
    fi
    say "$name $why; restarting it in ${delay}s"
    sleep "$delay" &
    child=$!
    wait "$child" 2>/dev/null || true
    child=''
    [ "$stopping" = 0 ] || exit 0
    delay=$(( delay * 2 > RESTART_MAX_DELAY ? RESTART_MAX_DELAY : delay * 2 ))
  done
}

# The browser test of the ops console (test/e2e/ops-console.e2e-spec.ts) drives the system's Chromium
# through playwright-core (Playwright's own browser download is not used). Installs Debian's chromium
# when none is found; CHROMIUM_PATH names another build.
ensure_chromium() {
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    [ -x "$CHROMIUM_PATH" ] || die "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable."
    return 0
  fi
  local c
  for c in chromium chromium-browser google-chrome google-chrome-stable; do command -v "$c" >/dev/null && return 0; done
  command -v apt-get >/dev/null || die "the ops console's browser test needs Chromium and this machine has no apt-get: install Chromium and set CHROMIUM_PATH to its executable."
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "installing Chromium for the ops console's browser test (apt-get install chromium, once)"
  $sudo apt-get update -qq >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
    die "could not install chromium with apt-get (see its message above): install Chromium and set CHROMIUM_PATH to its executable."
}
