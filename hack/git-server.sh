#!/usr/bin/env bash
# Git servers on 127.0.0.1 for tests, both serving the bare repos in
# $AIRLOCK_STATE/git/repos:
#   smart HTTP  http://127.0.0.1:${AIRLOCK_GIT_HTTP_PORT:-8418}/NAME.git
#               (git http-backend behind hack/git-http-server.py; push allowed, no auth)
#   git daemon  git://127.0.0.1:${AIRLOCK_GIT_DAEMON_PORT:-9418}/NAME.git (push allowed)
#
# Usage: hack/git-server.sh [start|stop|status|env]
#        hack/git-server.sh new-repo NAME   # (re)creates an empty bare repo NAME.git
#                                           # (branch main) and prints its http URL
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GIT_HTTP_PORT="${AIRLOCK_GIT_HTTP_PORT:-8418}"
GIT_DAEMON_PORT="${AIRLOCK_GIT_DAEMON_PORT:-9418}"
GIT_ROOT="$AIRLOCK_STATE/git/repos"

install_deps() {
  # git: any git >= 2.28 (--initial-branch); a locally built one on PATH is fine too,
  # as long as its exec path has http-backend and daemon.
  if ! command -v git >/dev/null; then ensure_pkgs git; fi
  local exec_path
  exec_path="$(git --exec-path)"
  if [ ! -x "$exec_path/git-http-backend" ] || [ ! -x "$exec_path/git-daemon" ]; then
    ensure_pkgs git
  fi
  ensure_pkgs curl
  system_python >/dev/null
}

new_repo() {
  local name="${1:?usage: $0 new-repo NAME}"
  name="${name%.git}"
  case "$name" in
    '' | /* | *..*) die "bad repo name '$name'" ;;
  esac
  local dir="$GIT_ROOT/$name.git"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  git init -q --bare --initial-branch=main "$dir"
  # http-backend refuses pushes from unauthenticated users unless this is set.
  git -C "$dir" config http.receivepack true
  git -C "$dir" config daemon.receivepack true
  # Let clients fetch a pinned commit by id and use partial clone filters.
  git -C "$dir" config uploadpack.allowReachableSHA1InWant true
  git -C "$dir" config uploadpack.allowFilter true
  echo "http://127.0.0.1:$GIT_HTTP_PORT/$name.git"
}

start() {
  install_deps
  mkdir -p "$GIT_ROOT"
  if ! is_running git-http; then
    port_open "$GIT_HTTP_PORT" && die "port $GIT_HTTP_PORT is taken by another process; set AIRLOCK_GIT_HTTP_PORT"
    start_bg git-http "$(system_python)" "$HACK_DIR/git-http-server.py" 127.0.0.1 "$GIT_HTTP_PORT" "$GIT_ROOT"
  fi
  if ! is_running git-daemon; then
    port_open "$GIT_DAEMON_PORT" && die "port $GIT_DAEMON_PORT is taken by another process; set AIRLOCK_GIT_DAEMON_PORT"
    start_bg git-daemon git daemon --reuseaddr --listen=127.0.0.1 --port="$GIT_DAEMON_PORT" \
      --base-path="$GIT_ROOT" --export-all --enable=receive-pack --informative-errors --verbose "$GIT_ROOT"
  fi
  wait_for_port "$GIT_HTTP_PORT" 30 || die "git http server did not start; see $(log_file git-http)"
  wait_for_port "$GIT_DAEMON_PORT" 30 || die "git daemon did not start; see $(log_file git-daemon)"
  log "git smart HTTP: http://127.0.0.1:$GIT_HTTP_PORT/NAME.git"
  log "git daemon:     git://127.0.0.1:$GIT_DAEMON_PORT/NAME.git"
  log "repos in $GIT_ROOT; new one: $0 new-repo NAME"
  print_stop_hint git-http git-daemon
  log "stop both: $0 stop"
}

stop() {
  stop_pid git-http
  stop_pid git-daemon
}

status() { print_status git-http git-daemon; }

env_lines() {
  cat <<EOF
export AIRLOCK_GIT_HTTP=http://127.0.0.1:$GIT_HTTP_PORT
export AIRLOCK_GIT_DAEMON=git://127.0.0.1:$GIT_DAEMON_PORT
export AIRLOCK_GIT_ROOT=$GIT_ROOT
EOF
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  new-repo) shift; new_repo "$@" ;;
  *) echo "usage: $0 [start|stop|status|env|new-repo NAME]" >&2; exit 2 ;;
esac
