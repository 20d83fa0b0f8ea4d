# shellcheck shell=bash
# Shared helpers for the hack/ service scripts. Source it; do not run it.
#
# Layout:
#   $AIRLOCK_CACHE  (default ~/.cache/airlock)      slow-to-make things kept across runs
#                                                  (built Kubernetes binaries, sources)
#   $AIRLOCK_STATE  (default ~/.cache/airlock/run)  runtime data, pid files, logs, certs

set -euo pipefail

# CI may run with a bare environment; do not trip `set -u` on a missing HOME.
HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
AIRLOCK_CACHE="${AIRLOCK_CACHE:-$HOME/.cache/airlock}"
AIRLOCK_STATE="${AIRLOCK_STATE:-$HOME/.cache/airlock/run}"
export AIRLOCK_CACHE AIRLOCK_STATE
# Everything here must run unattended (CI has no stdin).
export DEBIAN_FRONTEND=noninteractive

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export HACK_DIR

mkdir -p "$AIRLOCK_CACHE" "$AIRLOCK_STATE"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Run as root directly, otherwise through sudo (developer laptops).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

_APT_UPDATED=""
# ensure_pkgs PKG... — install the Debian packages that are not installed yet.
# apt-get update runs at most once per process, and only when something is missing,
# so a warm machine does no network traffic at all.
ensure_pkgs() {
  local missing=() p
  for p in "$@"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
      missing+=("$p")
    fi
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  if [ -z "$_APT_UPDATED" ]; then
    as_root apt-get update -qq
    _APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Debian's python3 (not pyenv's shim, whose version/modules vary per machine).
system_python() {
  if [ ! -x /usr/bin/python3 ]; then ensure_pkgs python3; fi
  echo /usr/bin/python3
}

# port_open PORT [HOST] — true when something accepts TCP connections there.
port_open() {
  local port="$1" host="${2:-127.0.0.1}"
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# wait_for_port PORT [TIMEOUT_SECONDS] [HOST]
wait_for_port() {
  local port="$1" timeout="${2:-30}" host="${3:-127.0.0.1}" i
  for ((i = 0; i < timeout * 5; i++)); do
    port_open "$port" "$host" && return 0
    sleep 0.2
  done
  log "timed out after ${timeout}s waiting for $host:$port"
  return 1
}

# wait_for_url URL [TIMEOUT_SECONDS] [extra curl args...] — waits for an HTTP 2xx.
wait_for_url() {
  local url="$1" timeout="${2:-30}" i
  shift 2 || shift $#
  for ((i = 0; i < timeout * 2; i++)); do
    if curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  log "timed out after ${timeout}s waiting for $url"
  return 1
}

pid_file() { echo "$AIRLOCK_STATE/pids/$1.pid"; }
log_file() { echo "$AIRLOCK_STATE/logs/$1.log"; }

# is_running NAME — true when NAME.pid names a live process that we started as NAME.
# start_bg tags each service with AIRLOCK_SERVICE_NAME in its environment, so a stale
# pid file (machine rebooted, pid reused by something else) is never mistaken for
# our service, and stop_pid never signals a stranger. A process in the middle of its
# exec (start_bg's shell becoming the service) shows no environment for a moment, so a
# live process without the tag is asked again before it counts as a stranger.
is_running() {
  local pf pid i
  pf="$(pid_file "$1")"
  [ -f "$pf" ] || return 1
  pid="$(cat "$pf")"
  [ -n "$pid" ] || return 1
  for i in 1 2 3; do
    kill -0 "$pid" 2>/dev/null || return 1
    grep -qzxF "AIRLOCK_SERVICE_NAME=$1" "/proc/$pid/environ" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# exited NAME — true when the service NAME, started by this script moments ago, is gone
# (its pid file names no live process). For the waits right after start_bg: the pid file
# is our own there, so the environment tag is not needed, and a live process without it
# is reported (it was seen in CI, once per run at most, and never reproduced) instead of
# being taken for a dead service.
exited() {
  local pid
  pid="$(cat "$(pid_file "$1")" 2>/dev/null)" || return 0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  if ! is_running "$1"; then
    log "note: $1 (pid $pid) is alive without its tag; environ holds $(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | wc -l) entries"
  fi
  return 1
}

# start_bg NAME CMD... — start CMD detached (own session, so it outlives the caller
# and ignores the caller's Ctrl-C), writing pids/NAME.pid and logs/NAME.log.
# Does nothing when NAME is already running.
start_bg() {
  local name="$1"
  shift
  mkdir -p "$AIRLOCK_STATE/pids" "$AIRLOCK_STATE/logs"
  if is_running "$name"; then
    log "$name already running (pid $(cat "$(pid_file "$name")"))"
    return 0
  fi
  local lf
  lf="$(log_file "$name")"
  printf '\n=== %s starting: %s\n' "$(date -Is)" "$*" >>"$lf"
  # setsid: own session, so it survives our exit and our Ctrl-C; the inner shell
  # records its own pid and then execs, so the pid file names the service itself
  # (setsid may fork, making $! useless). stdin from /dev/null so CI never blocks.
  # Descriptors above 2 are closed first: a service outlives whoever started it, and must
  # not keep their files open (a `flock` around a test run would never be released).
  rm -f "$(pid_file "$name")"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid env AIRLOCK_SERVICE_NAME="$name" bash -c 'for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; echo "$$" >"$0"; exec "$@"' "$(pid_file "$name")" "$@" \
    </dev/null >>"$lf" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do
    [ -s "$(pid_file "$name")" ] && break
    sleep 0.1
  done
  log "$name started (pid $(cat "$(pid_file "$name")"), log $lf)"
}

# stop_pid NAME — TERM the recorded pid, wait up to 10s, then KILL. Idempotent.
stop_pid() {
  local name="$1" pf pid i
  pf="$(pid_file "$name")"
  [ -f "$pf" ] || return 0
  pid="$(cat "$pf")"
  if is_running "$name"; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) ignored TERM; sending KILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "$name stopped (pid $pid)"
  fi
  rm -f "$pf"
}

# print_status NAME... — "NAME: running, pid N" or "NAME: stopped" for each; fails when
# one is stopped.
print_status() {
  local n rc=0
  for n in "$@"; do
    if is_running "$n"; then
      echo "$n: running, pid $(cat "$(pid_file "$n")")"
    else
      echo "$n: stopped"
      rc=1
    fi
  done
  return "$rc"
}

# print_stop_hint NAME... — tell the user how to stop what we started.
print_stop_hint() {
  local n
  for n in "$@"; do
    if is_running "$n"; then
      log "  $n: pid $(cat "$(pid_file "$n")")  (stop: kill $(cat "$(pid_file "$n")"), log: $(log_file "$n"))"
    fi
  done
}

# bench_binaries — builds the puller and the publisher the benchmarks run and prints their
# directory: the release build users run, or with BENCH_QUICK (the harness check CI runs,
# whose figures only show the harness works) the dev build the tests and the quickstart
# already made. Always this package set: another set unifies features differently and
# would build every dependency again. BENCH_BIN_DIR names binaries built elsewhere (another
# commit's, to compare two builds on the same data) and builds nothing.
bench_binaries() {
  if [ -n "${BENCH_BIN_DIR:-}" ]; then
    :
  elif [ -n "${BENCH_QUICK:-}" ]; then
    cargo build --locked -p airlock-puller -p airlock-publisher >&2
  else
    log "building the release binaries"
    cargo build --release --locked -p airlock-puller -p airlock-publisher >&2
  fi
  bench_bin_dir
}

# bench_bin_dir — where bench_binaries puts them (CI builds into its own CARGO_TARGET_DIR).
bench_bin_dir() {
  if [ -n "${BENCH_BIN_DIR:-}" ]; then
    realpath -m "$BENCH_BIN_DIR"
  else
    realpath -m "${CARGO_TARGET_DIR:-target}/$([ -n "${BENCH_QUICK:-}" ] && echo debug || echo release)"
  fi
}

# bench_workdir NAME — a fresh directory for one benchmark invocation under $BENCH_OUT
# (default target/bench); the caller removes it on exit. Fresh each time: deleting tens of
# thousands of files right before creating as many again slows ext4's inode allocation
# down, which would be measured instead of the publisher.
bench_workdir() {
  local out="${BENCH_OUT:-$PWD/target/bench}"
  mkdir -p "$out"
  mktemp -d "$out/$1.XXXXXX"
}
