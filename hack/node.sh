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
# says the same, so no pod learns the host's resolver). Images are named 127.0.0.1:5000/...
# so that a missing one is looked for in the local registry, never on the internet.
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
# Started in this order, stopped in the reverse one.
COMPONENTS=(etcd apiserver controller-manager scheduler containerd kubelet)
PKGS=(etcd-server openssl curl containerd runc containernetworking-plugins strace umoci gcc libc6-dev busybox-static)

kubectl() { "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DIR/kubectl-cache" "$@"; }

# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------

gen_pki() {
  [ -f "$PKI/.done" ] && return 0
  rm -rf "$PKI"
  pki_ca "$PKI" airlock-test-node-ca
  pki_leaf "$PKI" apiserver "/CN=kube-apiserver" server \
    "IP:$API_ADDR, IP:127.0.0.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"
  # The Node authorizer and NodeRestriction know a kubelet by this name and group.
  pki_leaf "$PKI" kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" client
  pki_leaf "$PKI" kubelet-serving "/CN=$NODE_NAME" server "IP:$NODE_NAME"
  # The apiserver's identity towards the kubelet (logs, exec).
  pki_leaf "$PKI" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  pki_service_account_keys "$PKI"
  (
    umask 077
    local user
    for user in admin kcm scheduler; do openssl rand -hex 16 >"$PKI/$user.token"; done
    {
      echo "$(cat "$PKI/admin.token"),airlock-admin,airlock-admin,\"system:masters\""
      echo "$(cat "$PKI/kcm.token"),system:kube-controller-manager,kcm,\"system:masters\""
      # The bootstrap RBAC policy binds this user to what a scheduler needs.
      echo "$(cat "$PKI/scheduler.token"),system:kube-scheduler,scheduler"
    } >"$PKI/tokens.csv"
  )
  touch "$PKI/.done"
}

write_configs() {
  local server="https://$API_ADDR:$API_PORT" d name
  write_kubeconfig "$KUBECONFIG_FILE" airlock-node airlock-node-admin "$server" "$PKI/ca.crt" token "$(cat "$PKI/admin.token")"
  write_kubeconfig "$DIR/controller-manager.kubeconfig" airlock-node kcm "$server" "$PKI/ca.crt" token "$(cat "$PKI/kcm.token")"
  write_kubeconfig "$DIR/scheduler.kubeconfig" airlock-node scheduler "$server" "$PKI/ca.crt" token "$(cat "$PKI/scheduler.token")"
  write_kubeconfig "$DIR/kubelet.kubeconfig" airlock-node "system:node:$NODE_NAME" "$server" "$PKI/ca.crt" \
    cert "$PKI/kubelet-client.crt" "$PKI/kubelet-client.key"
  for d in containerd/root containerd/opt cni kubelet trace; do mkdir -p "$DIR/$d"; done
  echo "nameserver 127.0.0.1" >"$DIR/resolv.conf"
  # Pods get sandboxes, but hostNetwork ones never reach CNI: the plugin is only there
  # because the runtime reports the node's network ready once a configuration loads.
  cat >"$DIR/cni/10-loopback.conflist" <<'JSON'
{"cniVersion": "0.4.0", "name": "airlock-loopback", "plugins": [{"type": "loopback"}]}
JSON
  # The local registry over plain HTTP, under both its names (`register`'s default image
  # is localhost:5000/...).
  for name in "$REGISTRY" "localhost:${REGISTRY#*:}"; do
    mkdir -p "$DIR/containerd/certs.d/$name"
    cat >"$DIR/containerd/certs.d/$name/hosts.toml" <<TOML
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
TOML
  done
  cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
# Snapshotters this machine cannot use; they would only log errors.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # The VM gives no CAP_SYS_RESOURCE: lowering a score fails, and with it every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/bin/runc"
        # cgroup v1 without systemd: the kubelet uses cgroupfs too.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/containerd/certs.d"
TOML
  cat >"$DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failSwapOn: false
resolvConf: $DIR/resolv.conf
clusterDomain: cluster.local
# It would add chains to the host's iptables.
makeIPTablesUtilChains: false
serializeImagePulls: false
# A fresh node reports Ready on its first status update after the runtime is up: sooner
# than the default 10s. Unchanged status is still posted only once a minute.
nodeStatusUpdateFrequency: 1s
nodeStatusReportFrequency: 1m
YAML
}

# ---------------------------------------------------------------------------
# the mount namespace and the traces
# ---------------------------------------------------------------------------

# Runs as the first process of the private mount namespace: the paths containerd and the
# kubelet hard-code (/run/containerd/s, /var/log/pods, /var/lib/kubelet/device-plugins)
# land in $HOST_DIR, and every mount made in here dies with the namespace.
ns_init() {
  local d
  for d in run var/log var/lib; do
    mkdir -p "$HOST_DIR/$d"
    # -n: libmount would otherwise keep its utab in the host's /run/mount.
    mount -n --bind "$HOST_DIR/$d" "/$d"
  done
  traced "$@"
}

# traced NAME CMD... — exec CMD under strace, every connect of it and of its children to
# $TRACE_DIR/NAME.trace. The seccomp filter stops the tracee for connect only.
traced() {
  local name="$1"
  shift
  exec strace -f --seccomp-bpf -qq -e trace=connect -e signal=none -o "$TRACE_DIR/$name.trace" -- "$@"
}

# service_pid NAME — the process strace runs for NAME (pid files name strace, once the
# namespace is set up).
service_pid() {
  local pid child
  is_running "$P-$1" || return 1
  pid="$(cat "$(pid_file "$P-$1")")"
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = strace ] || return 1
  # One line without a newline: read fails at its end but fills the variable.
  read -r child _ <"/proc/$pid/task/$pid/children" || true
  [ -n "${child:-}" ] && echo "$child"
}

# wait_service NAME — until strace runs NAME's process.
wait_service() {
  local i
  for ((i = 0; i < 100; i++)); do
    service_pid "$1" >/dev/null && return 0
    is_running "$P-$1" || break
    sleep 0.1
  done
  die "$1 did not start; see $(log_file "$P-$1")"
}

# start_in_namespace NAME CMD... — CMD in the namespace of whichever of containerd and the
# kubelet runs (the kubelet's volume mounts must be where containerd looks), else a new one.
start_in_namespace() {
  local name="$1" other pid
  shift
  for other in containerd kubelet; do
    pid="$(service_pid "$other")" || continue
    start_bg "$P-$name" nsenter --mount="/proc/$pid/ns/mnt" -- "$HACK_DIR/node.sh" __traced "$name" "$@"
    wait_service "$name"
    return 0
  done
  start_bg "$P-$name" unshare --mount --propagation private -- "$HACK_DIR/node.sh" __ns-init "$name" "$@"
  wait_service "$name"
  readlink "/proc/$(service_pid "$name")/ns/mnt" >"$DIR/mntns"
}

# kubepods_pids — every process in the kubelet's cgroups.
kubepods_pids() {
  local d
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} +
  done
  return 0
}

# node_pids — processes left by containerd and the kubelet: in our mount namespace with
# our service tag (shims), or in the kubelet's cgroups (containers).
node_pids() {
  local ns p
  ns="$(cat "$DIR/mntns" 2>/dev/null)" || ns=""
  if [ -n "$ns" ]; then
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
      grep -qzE "^AIRLOCK_SERVICE_NAME=$P-(containerd|kubelet)\$" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
    done
  fi
  kubepods_pids
}

# stop_traced NAME — TERM the service (its strace exits once all its tracees have).
stop_traced() {
  local name="$1" pid i
  if pid="$(service_pid "$name")"; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    log "$P-$name stopped (pid $pid)"
  fi
}

kill_node_pids() {
  local pids i
  for ((i = 0; i < 50; i++)); do
    mapfile -t pids < <(node_pids | sort -u)
    [ "${#pids[@]}" -eq 0 ] && return 0
    kill -9 "${pids[@]}" 2>/dev/null || true
    sleep 0.2
  done
  log "warning: node processes still alive: ${pids[*]}"
}

# ---------------------------------------------------------------------------
# host state the kubelet changes
# ---------------------------------------------------------------------------

sysctl_path() { echo "/proc/sys/${1//.//}"; }

# Saved once, before the first kubelet start, so a crash never saves the kubelet's values.
save_sysctls() {
  [ -f "$DIR/sysctl.saved" ] && return 0
  local s
  for s in "${SYSCTLS[@]}"; do echo "$s $(cat "$(sysctl_path "$s")")"; done >"$DIR/sysctl.saved.tmp"
  mv "$DIR/sysctl.saved.tmp" "$DIR/sysctl.saved"
}

restore_sysctls() {
  [ -f "$DIR/sysctl.saved" ] || return 0
  local s v
  while read -r s v; do echo "$v" >"$(sysctl_path "$s")"; done <"$DIR/sysctl.saved"
  rm -f "$DIR/sysctl.saved"
}

remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && log "warning: $d could not be removed"
  done
  return 0
}

# Before a start with neither containerd nor the kubelet running: what an earlier run that
# did not stop cleanly left is ours to remove; another kubelet's is not.
clean_leftovers() {
  if is_running "$P-containerd" || is_running "$P-kubelet"; then return 0; fi
  if pgrep -x kubelet >/dev/null; then die "another kubelet runs on this machine (pid $(pgrep -x kubelet | head -n1))"; fi
  if [ -n "$(kubepods_pids)" ] && [ ! -f "$DIR/mntns" ]; then
    die "/sys/fs/cgroup/*/kubepods holds processes this script did not start"
  fi
  kill_node_pids
  rm -f "$DIR/mntns"
  rm -rf "$HOST_DIR/run" "$DIR/containerd/state"
  remove_cgroups
  restore_sysctls
}

# ---------------------------------------------------------------------------
# start / stop
# ---------------------------------------------------------------------------

api_ready() {
  curl -fsS --max-time 3 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(cat "$PKI/admin.token")" \
    "https://$API_ADDR:$API_PORT/readyz" >/dev/null 2>&1
}

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
  if ! is_running "$P-etcd"; then
    port_open "$ETCD_PORT" && die "port $ETCD_PORT taken by another process; set AIRLOCK_KUBE_NODE_ETCD_PORT"
    port_open "$ETCD_PEER_PORT" && die "port $ETCD_PEER_PORT taken by another process; set AIRLOCK_KUBE_NODE_ETCD_PEER_PORT"
    start_bg "$P-etcd" /usr/bin/etcd \
      --name=airlock-node --data-dir="$DIR/etcd-data" \
      --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster="airlock-node=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
      --logger=zap --log-outputs=stderr \
      --auto-compaction-mode=periodic --auto-compaction-retention=10m
  fi
  wait_for_url "http://127.0.0.1:$ETCD_PORT/health" 60 || die "etcd (node) not healthy; see $(log_file "$P-etcd")"

  if ! is_running "$P-apiserver"; then
    port_open "$API_PORT" "$API_ADDR" && die "$API_ADDR:$API_PORT taken by another process"
    start_bg "$P-apiserver" "$K8S_BIN/kube-apiserver" \
      --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
      --bind-address="$API_ADDR" --advertise-address="$API_ADDR" \
      --secure-port="$API_PORT" --insecure-port=0 --cert-dir="$DIR/apiserver-certs" \
      --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
      --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" \
      --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
      --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
      --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
      --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
      --service-account-issuer=https://kubernetes.default.svc.cluster.local \
      --service-account-signing-key-file="$PKI/sa.key" --service-account-key-file="$PKI/sa.pub" \
      --service-cluster-ip-range="$SERVICE_RANGE" --allow-privileged=true \
      --endpoint-reconciler-type=none --profiling=false
  fi
  local i
  for ((i = 0; i < 240; i++)); do
    api_ready && break
    is_running "$P-apiserver" || die "kube-apiserver (node) exited; see $(log_file "$P-apiserver")"
    sleep 0.5
  done
  api_ready || die "kube-apiserver (node) not ready after 120s; see $(log_file "$P-apiserver")"

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
  if ! is_running "$P-containerd"; then
    start_in_namespace containerd /usr/bin/containerd --config "$DIR/containerd/config.toml"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    ctr version >/dev/null 2>&1 && return 0
    is_running "$P-containerd" || break
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
  is_running "$P-kubelet" && return 0
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
  # Each takes a second or two to shut down: at once, etcd last.
  local c
  for c in scheduler controller-manager apiserver; do stop_pid "$P-$c" & done
  wait
  stop_pid "$P-etcd"
}

status() {
  local c rc=0
  for c in "${COMPONENTS[@]}"; do
    if is_running "$P-$c"; then
      echo "$P-$c: running, pid $(cat "$(pid_file "$P-$c")")"
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
    is_running "$P-containerd" || die "the node's containerd is not running: $0 start"
    load "$2" "$3"
    ;;
  # Stop and forget the node's data, certificates, images and traces.
  clean) stop; rm -rf "$DIR" ;;
  # Internal: the first process of the mount namespace, and a traced process inside it.
  __ns-init) shift; ns_init "$@" ;;
  __traced) shift; traced "$@" ;;
  *) echo "usage: $0 [start|stop|status|env|build|clean] | load LAYOUT_DIR REPOSITORY" >&2; exit 2 ;;
esac
