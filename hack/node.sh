#!/usr/bin/env bash
# A single-node Kubernetes 1.20 cluster on 127.0.0.0/8 for tests that need pods to really
# run: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd + runc and
# a kubelet. hack/kube.sh's instances store objects only; this one runs them.
#
# Usage: hack/node.sh [start|stop|status|env|build|clean]
#        hack/node.sh load LAYOUT_DIR REPOSITORY   every tag of an OCI layout into containerd,
#                                                  as REPOSITORY:TAG (e.g. hack/image.sh's
#                                                  target/image as 127.0.0.1:5000/airlock/puller)
#   apiserver https://127.0.100.1:443 (the service range's first IP, so in-cluster clients
#             reach it as the `kubernetes` Service without kube-proxy)
#   etcd      127.0.0.1:2385/2386     kubelet 127.0.0.1:10250 (healthz :10248)
#   Ports: AIRLOCK_KUBE_NODE_ETCD_PORT, ..._ETCD_PEER_PORT, ..._KUBELET_PORT,
#   ..._KUBELET_HEALTHZ_PORT. State: $AIRLOCK_STATE/kube-node/.
#
# Pods: only `hostNetwork: true` pods reach anything (CNI has only a loopback plugin, no
# bridge); give them `dnsPolicy: None` with nameserver 127.0.0.1 (the kubelet's resolv.conf
# says the same, so no pod learns the host's resolver). Name images 127.0.0.1:5000/... or
# localhost:5000/...: a missing one is then looked for in the local registry, never on the
# internet.
# containerd and the kubelet run under `strace -e trace=connect`; tests/node.rs checks the
# traces for any address outside 127.0.0.0/8. docs/testing.md says why each setting is here.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=kube-lib.sh
. "$HACK_DIR/kube-lib.sh"

API_ADDR=127.0.100.1
API_PORT=443
SERVICE_RANGE=127.0.100.0/24
NODE_NAME=127.0.0.1
ETCD_PORT="${AIRLOCK_KUBE_NODE_ETCD_PORT:-2385}"
ETCD_PEER_PORT="${AIRLOCK_KUBE_NODE_ETCD_PEER_PORT:-$((ETCD_PORT + 1))}"
KUBELET_PORT="${AIRLOCK_KUBE_NODE_KUBELET_PORT:-10250}"
KUBELET_HEALTHZ_PORT="${AIRLOCK_KUBE_NODE_KUBELET_HEALTHZ_PORT:-10248}"
REGISTRY="127.0.0.1:${AIRLOCK_REGISTRY_PORT:-5000}"
PAUSE_IMAGE="$REGISTRY/airlock-node/pause:3.4"
BUSYBOX_REPO="$REGISTRY/airlock-node/busybox"

DIR="$AIRLOCK_STATE/kube-node"
PKI="$DIR/pki"
KUBECONFIG_FILE="$DIR/kubeconfig"
TRACE_DIR="$DIR/trace"
# What the private mount namespace sees as /run, /var/log and /var/lib.
HOST_DIR="$DIR/host"
CONTAINERD_SOCK="$DIR/containerd/containerd.sock"
# The kubelet's changes to these are undone on stop.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
P=kube-node
PKGS=(etcd-server openssl curl containerd runc containernetworking-plugins strace umoci gcc libc6-dev busybox-static)

kubectl() { "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DIR/kubectl-cache" "$@"; }

# shellcheck source-path=SCRIPTDIR source=node-config.sh
. "$HACK_DIR/node-config.sh"
# shellcheck source-path=SCRIPTDIR source=node-host.sh
. "$HACK_DIR/node-host.sh"

# ---------------------------------------------------------------------------
# start / stop
# ---------------------------------------------------------------------------

# wait_until SECONDS WHAT CMD... — retry CMD every half second.
wait_until() {
  local timeout="$1" what="$2" i
  shift 2
  for ((i = 0; i < timeout * 2; i++)); do
    "$@" && return 0
    sleep 0.5
  done
  die "$what not reached after ${timeout}s; logs in $AIRLOCK_STATE/logs/$P-*.log"
}

start_control_plane() {
  start_etcd "$P-etcd" airlock-node "$DIR/etcd-data" "$ETCD_PORT" "$ETCD_PEER_PORT"
  start_apiserver "$P-apiserver" "$DIR" "$ETCD_PORT" "$API_ADDR" "$API_PORT" "$SERVICE_RANGE" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP

  # No serving ports, no leader election, as in hack/kube.sh; the node controllers on
  # (a new node is tainted not-ready until the lifecycle controller clears it), only the
  # cloud ones and those for Services and node CIDRs off.
  if ! is_running "$P-controller-manager"; then
    start_bg "$P-controller-manager" "$K8S_BIN/kube-controller-manager" \
      --kubeconfig="$DIR/controller-manager.kubeconfig" \
      --secure-port=0 --port=0 --leader-elect=false \
      --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
      --cluster-name=airlock-node --controllers='*,-cloud-node-lifecycle,-route,-service,-nodeipam' \
      --node-monitor-period=1s \
      --profiling=false
  fi
}

start_scheduler() {
  is_running "$P-scheduler" && return 0
  start_bg "$P-scheduler" "$K8S_BIN/kube-scheduler" \
    --kubeconfig="$DIR/scheduler.kubeconfig" \
    --secure-port=0 --port=0 --leader-elect=false --profiling=false
}

start_containerd() {
  if ! service_pid containerd >/dev/null; then
    start_in_namespace containerd /usr/bin/containerd --config "$DIR/containerd/config.toml"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    ctr version >/dev/null 2>&1 && return 0
    service_pid containerd >/dev/null || break
    sleep 0.2
  done
  die "containerd (node) not answering on $CONTAINERD_SOCK; see $(log_file "$P-containerd")"
}

ctr() { command ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# load LAYOUT_DIR REPOSITORY — every tag of the layout as REPOSITORY:TAG, unpacked for
# the CRI's snapshotter.
load() {
  local layout="$1" repo="$2"
  [ -f "$layout/index.json" ] || die "$layout is not an OCI layout"
  tar -C "$layout" -cf - . | ctr images import --base-name "$repo" - >/dev/null
}

load_images() {
  local name layout tag
  "$HACK_DIR/node-images.sh" build
  while read -r name layout tag; do
    ctr images ls -q | grep -qxF "$REGISTRY/airlock-node/$name:$tag" && continue
    load "$layout" "$REGISTRY/airlock-node/$name"
    log "loaded $REGISTRY/airlock-node/$name:$tag into containerd"
  done < <("$HACK_DIR/node-images.sh" tags)
}

start_kubelet() {
  service_pid kubelet >/dev/null && return 0
  # A kubelet that died may leave its strace following what it started.
  stop_pid "$P-kubelet"
  save_sysctls
  date +%s >"$DIR/kubelet.started"
  # The in-tree AWS credential provider asks the EC2 metadata address for credentials
  # unless told not to.
  start_in_namespace kubelet env AWS_EC2_METADATA_DISABLED=true "$K8S_BIN/kubelet" \
    --config="$DIR/kubelet.yaml" --kubeconfig="$DIR/kubelet.kubeconfig" \
    --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --container-runtime=remote --container-runtime-endpoint="unix://$CONTAINERD_SOCK" \
    --hostname-override="$NODE_NAME" --pod-infra-container-image="$PAUSE_IMAGE"
}

# Ready as reported by this kubelet (a restarted one finds its predecessor's status), and
# the lifecycle controller's not-ready taint gone.
node_ready() {
  local out ready beat taints
  out="$(kubectl get node "$NODE_NAME" -o \
    'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime} {.spec.taints}' 2>/dev/null)" ||
    return 1
  read -r ready beat taints <<<"$out"
  [ "$ready" = True ] && [ -z "$taints" ] && [ "$(date -d "$beat" +%s)" -ge "$(cat "$DIR/kubelet.started")" ]
}

default_sa() { kubectl -n default get serviceaccount default >/dev/null 2>&1; }

start() {
  local t0=$SECONDS build_pid=""
  case "$DIR/" in
    /run/* | /var/log/* | /var/lib/*) die "$DIR lies below a directory the node's mount namespace replaces" ;;
  esac
  ensure_pkgs "${PKGS[@]}"
  mkdir -p "$DIR"
  # Without the control plane's binaries, one go build makes all of them (the packages they
  # share compile once); else the node's build while the control plane starts.
  if [ -n "$(missing_binaries kube-apiserver kube-controller-manager kubectl)" ]; then
    "$HACK_DIR/kube.sh" build kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet
  fi
  "$HACK_DIR/kube.sh" build kube-scheduler kubelet >"$DIR/build.log" 2>&1 &
  build_pid=$!
  gen_pki
  write_configs
  clean_leftovers
  start_containerd
  load_images
  start_control_plane
  wait "$build_pid" || die "building kubelet and kube-scheduler failed; see $DIR/build.log"
  start_scheduler
  start_kubelet
  wait_until 120 "node $NODE_NAME Ready and untainted" node_ready
  wait_until 60 "default ServiceAccount" default_sa
  log "Kubernetes v$K8S_VERSION with node $NODE_NAME ready at https://$API_ADDR:$API_PORT in $((SECONDS - t0))s"
  log "  kubeconfig: $KUBECONFIG_FILE   traces: $TRACE_DIR"
  log "  kubectl:    $AIRLOCK_KUBECTL --kubeconfig $KUBECONFIG_FILE --cache-dir $DIR/kubectl-cache get pods -A"
  log "  pids: $0 status   logs: $AIRLOCK_STATE/logs/$P-*.log   stop: $0 stop"
}

stop() {
  stop_traced kubelet
  stop_pid "$P-kubelet"
  # Containers first: their shims would otherwise keep containerd's strace alive.
  kubepods_pids | xargs -r kill -9 2>/dev/null || true
  stop_traced containerd
  kill_node_pids
  stop_pid "$P-containerd"
  rm -f "$DIR/mntns"
  # What lived in the namespace's /run: a new containerd finds no stale task state there.
  rm -rf "$HOST_DIR/run" "$DIR/containerd/state"
  remove_cgroups
  restore_sysctls
  # Each drains its requests before it exits: all at once, etcd last.
  local c
  for c in scheduler controller-manager apiserver; do stop_pid "$P-$c" & done
  wait
  stop_pid "$P-etcd"
}

# containerd and the kubelet count as running while the process their strace started does:
# strace outlives containerd while it follows the shims.
status() {
  local rc=0 c pid
  print_status "$P-etcd" "$P-apiserver" "$P-controller-manager" "$P-scheduler" || rc=1
  for c in containerd kubelet; do
    if pid="$(service_pid "$c")"; then
      echo "$P-$c: running, pid $pid (strace $(cat "$(pid_file "$P-$c")"))"
    else
      echo "$P-$c: stopped"
      rc=1
    fi
  done
  return "$rc"
}

env_lines() {
  local busybox_tag
  busybox_tag="$("$HACK_DIR/node-images.sh" tags | awk '$1 == "busybox" {print $3}')"
  cat <<EOF
export AIRLOCK_KUBECONFIG_NODE=$KUBECONFIG_FILE
export AIRLOCK_NODE_TRACES=$TRACE_DIR
export AIRLOCK_NODE_BUSYBOX=$BUSYBOX_REPO:$busybox_tag
export AIRLOCK_NODE_BUSYBOX_OCI=oci:$AIRLOCK_CACHE/node-images/busybox:$busybox_tag
EOF
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  build) "$HACK_DIR/kube.sh" build kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet && "$HACK_DIR/node-images.sh" build ;;
  load)
    [ $# -eq 3 ] || die "usage: $0 load LAYOUT_DIR REPOSITORY"
    service_pid containerd >/dev/null || die "the node's containerd is not running: $0 start"
    load "$2" "$3"
    ;;
  # Stop and forget the node's data, certificates, images and traces.
  clean) stop; rm -rf "$DIR" ;;
  # Internal: the first process of the mount namespace, and a traced process inside it.
  __ns-init) shift; ns_init "$@" ;;
  __traced) shift; traced "$@" ;;
  *) echo "usage: $0 [start|stop|status|env|build|clean] | load LAYOUT_DIR REPOSITORY" >&2; exit 2 ;;
esac
