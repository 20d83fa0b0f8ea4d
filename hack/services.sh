#!/usr/bin/env bash
# All test services at once: registries (plain :5000, htpasswd :5001, "remote" :5002),
# git servers (http :8418, git :9418), two Kubernetes 1.20 control planes without nodes
# (managed :6443, management :6444) and a single-node cluster that runs pods
# (hack/node.sh: 127.0.100.1:443).
#
# Usage: hack/services.sh [start|stop|status|env]
#   start   install what is missing (first run builds Kubernetes, ~5-10 min), start
#           everything not already running, write $AIRLOCK_STATE/services.env
#           (not the `faults` Kubernetes instance: the test that uses it starts it)
#   stop    stop everything, the `faults` instance included
#   env     print the export lines the tests read, e.g.  eval "$(hack/services.sh env)"
#           (tests treat a missing service as a failure when AIRLOCK_SERVICES=1)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBE_INSTANCES=(managed management)
# Started by the one test that stops its API server, never here; `stop` stops it too.
FAULTS_INSTANCE=faults

env_lines() {
  "$HACK_DIR/registry.sh" env
  "$HACK_DIR/git-server.sh" env
  local inst
  for inst in "${KUBE_INSTANCES[@]}"; do
    # KUBECONFIG itself is left alone: with two clusters it would be ambiguous.
    "$HACK_DIR/kube.sh" env "$inst" | grep -v '^export KUBECONFIG='
  done | sort -u
  "$HACK_DIR/node.sh" env
  echo "export AIRLOCK_STATE=$AIRLOCK_STATE"
  echo "export AIRLOCK_SERVICES=1"
}

# Everything the scripts below may install, in one apt transaction (one apt-get update
# at most) instead of one per script.
ALL_PKGS=(
  docker-registry skopeo apache2-utils curl git python3 etcd-server openssl
  golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync make ca-certificates xz-utils
  containerd runc containernetworking-plugins strace umoci gcc libc6-dev busybox-static
)
# Every Kubernetes binary in one go build: the packages they share compile once.
KUBE_BINARIES=(kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet)

# start_service SCRIPT [ARGS...] — starts one service with `SCRIPT start ARGS`; when that
# fails, shows the end of every log it wrote, stops what it left and starts it once more:
# a port still held by a process on its way out, or a node whose previous pods outlive
# their kubelet, rarely fails twice. The second failure shows its logs too.
start_service() {
  local script="$1" attempt mark
  shift
  for attempt in 1 2; do
    mark="$(mktemp)"
    if "$HACK_DIR/$script" start "$@"; then
      rm -f "$mark"
      return 0
    fi
    log "$script start $*: attempt $attempt failed; the end of the logs it wrote:"
    find "$AIRLOCK_STATE/logs" -name '*.log' -newer "$mark" -exec tail -n 15 -v {} + >&2 2>/dev/null || true
    rm -f "$mark"
    [ "$attempt" = 2 ] || "$HACK_DIR/$script" stop "$@" || true
  done
  return 1
}

start() {
  local t0=$SECONDS inst node_pid
  ensure_pkgs "${ALL_PKGS[@]}"
  "$HACK_DIR/kube.sh" build "${KUBE_BINARIES[@]}"
  start_service registry.sh || die "the registries did not start"
  start_service git-server.sh || die "the Git server did not start"
  # The node takes longest (its kubelet waits for the runtime, then for Ready): it starts
  # beside the control planes rather than after them.
  start_service node.sh &
  node_pid=$!
  for inst in "${KUBE_INSTANCES[@]}"; do
    start_service kube.sh "$inst" || die "the $inst API server did not start"
  done
  wait "$node_pid" || die "the node did not start (hack/node.sh start)"
  env_lines >"$AIRLOCK_STATE/services.env.tmp"
  mv "$AIRLOCK_STATE/services.env.tmp" "$AIRLOCK_STATE/services.env"
  log "all services up in $((SECONDS - t0))s; environment for tests:"
  log "  source $AIRLOCK_STATE/services.env    (or: eval \"\$($0 env)\")"
  log "stop all: $0 stop    (pids in $AIRLOCK_STATE/pids, logs in $AIRLOCK_STATE/logs)"
}

stop() {
  local inst
  "$HACK_DIR/node.sh" stop
  for inst in "${KUBE_INSTANCES[@]}" "$FAULTS_INSTANCE"; do
    "$HACK_DIR/kube.sh" stop "$inst"
  done
  "$HACK_DIR/git-server.sh" stop
  "$HACK_DIR/registry.sh" stop
  rm -f "$AIRLOCK_STATE/services.env"
}

status() {
  local rc=0 inst
  "$HACK_DIR/registry.sh" status || rc=1
  "$HACK_DIR/git-server.sh" status || rc=1
  for inst in "${KUBE_INSTANCES[@]}"; do
    "$HACK_DIR/kube.sh" status "$inst" || rc=1
  done
  "$HACK_DIR/node.sh" status || rc=1
  return "$rc"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  *) echo "usage: $0 [start|stop|status|env]" >&2; exit 2 ;;
esac
