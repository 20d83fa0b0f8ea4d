#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1 for tests: etcd + kube-apiserver +
# kube-controller-manager, no nodes (nothing gets scheduled; objects are just stored,
# validated, defaulted, garbage-collected and namespaces get finalized).
#
# Usage: hack/kube.sh [start|stop|stop-apiserver|status|env|clean] [managed|management|faults]
#        hack/kube.sh build [BINARY...]
#   build with no names builds the control plane's binaries; hack/node.sh names its own
#   (kubelet, kube-scheduler). One `go build` makes every missing one, so the packages they
#   share compile once.
#   instance (arg 2 or $AIRLOCK_KUBE_INSTANCE, default managed):
#     managed     apiserver :6443  etcd :2379/:2380
#     management  apiserver :6444  etcd :2381/:2382
#     faults      apiserver :6445  etcd :2383/:2384   (only the fault test that stops its
#                 API server uses it; it starts it, hack/services.sh does not)
#   stop-apiserver stops only the kube-apiserver; `start` then restarts just that, against
#   the same etcd (start leaves running components alone).
#   Ports can be overridden per instance: AIRLOCK_KUBE_<MANAGED|MANAGEMENT|FAULTS>_APISERVER_PORT,
#   ..._ETCD_PORT, ..._ETCD_PEER_PORT.
#   Instance state (etcd data, certs, tokens, kubeconfig): $AIRLOCK_STATE/kube-<instance>/
#
# Kubernetes is v1.20.2, built from Debian bookworm's `kubernetes` source package
# with Debian's Go 1.19 (bookworm ships no kube-apiserver binary). The cold build is
# long and needs a few GB of disk; the binaries are cached in
# $AIRLOCK_CACHE/kubernetes-1.20.2/bin and reused (`start` builds only when missing).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=kube-lib.sh
. "$HACK_DIR/kube-lib.sh"

K8S_SRC_PKG_VERSION="1.20.5+really1.20.2"
K8S_BINARIES=(kube-apiserver kube-controller-manager kubectl)
# Only hack/node.sh runs these; built on its demand, beside the others.
K8S_NODE_BINARIES=(kube-scheduler kubelet)

# ---------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------

# fetch_source — download the Debian source package into $K8S_HOME/debsrc using a
# private apt configuration whose sources are the machine's own `deb` entries turned
# into `deb-src` (so we never hard-code a mirror and never touch the system's apt state).
fetch_source() {
  local apt_dir="$K8S_HOME/apt" dl="$K8S_HOME/debsrc" f
  if compgen -G "$dl/kubernetes_${K8S_SRC_PKG_VERSION}-*.dsc" >/dev/null; then return 0; fi
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dl"
  : >"$apt_dir/sources.list"
  rm -f "$apt_dir/sources.list.d/"*
  # deb822 files (bookworm default) and one-line .list files are both handled.
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    sed -E 's/^Types:.*$/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/$(basename "$f")"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$apt_dir/sources.list"
  done
  local apt_opts=(
    -o "Dir::Etc::sourcelist=$apt_dir/sources.list"
    -o "Dir::Etc::sourceparts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    # Our private dirs are root-owned; the _apt sandbox user could not write them.
    -o "APT::Sandbox::User=root"
  )
  log "fetching Debian source package kubernetes ($K8S_SRC_PKG_VERSION)"
  apt-get "${apt_opts[@]}" update -qq
  (cd "$dl" && apt-get "${apt_opts[@]}" source --download-only kubernetes >&2)
  # Only bookworm's 1.20.5+really1.20.2 is known to build (and the fixes below fit it).
  compgen -G "$dl/kubernetes_${K8S_SRC_PKG_VERSION}-*.dsc" >/dev/null ||
    die "apt offered a kubernetes source other than $K8S_SRC_PKG_VERSION: $(ls "$dl")"
}

# unpack_source — orig tarball + Debian patches (CVE fix) at $GOPATH/src/k8s.io/kubernetes,
# because Kubernetes 1.20 only builds in GOPATH mode with its vendor/ tree.
unpack_source() {
  [ -f "$K8S_TREE/.airlock-unpacked" ] && return 0
  local dsc
  dsc="$(compgen -G "$K8S_HOME/debsrc/kubernetes_*.dsc" | head -n1)"
  rm -rf "$K8S_TREE"
  mkdir -p "$(dirname "$K8S_TREE")"
  log "unpacking $dsc"
  dpkg-source --no-check -x "$dsc" "$K8S_TREE" >&2
  # vendored modern-go/reflect2 1.0.1 reads runtime internals that changed in Go 1.18
  # and segfaults (in json-iterator) on the first custom-resource apply; Debian's
  # 1.0.2 is API-compatible and knows Go >= 1.18.
  rm -rf "$K8S_TREE/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$K8S_TREE/vendor/github.com/modern-go/reflect2"
  rm -f "$K8S_TREE/vendor/github.com/modern-go/reflect2/go.mod"
  touch "$K8S_TREE/.airlock-unpacked"
}

# build [BINARY...] — builds the named binaries (default: the control plane's) that are
# missing. Runs in a subshell: it exports Go settings and cd's into the tree.
build() (
  local wanted=("$@") missing b
  [ "${#wanted[@]}" -gt 0 ] || wanted=("${K8S_BINARIES[@]}")
  for b in "${wanted[@]}"; do
    case " ${K8S_BINARIES[*]} ${K8S_NODE_BINARIES[*]} " in
      *" $b "*) ;;
      *) die "unknown binary '$b' (want some of: ${K8S_BINARIES[*]} ${K8S_NODE_BINARIES[*]})" ;;
    esac
  done
  mapfile -t missing < <(missing_binaries "${wanted[@]}")
  if [ "${#missing[@]}" -eq 0 ]; then
    log "kubernetes $K8S_VERSION binaries present in $K8S_BIN: ${wanted[*]}"
    return 0
  fi
  # rsync/make: used by the tree's code generators; dpkg-dev: dpkg-source.
  ensure_pkgs golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync make ca-certificates xz-utils
  local t0=$SECONDS
  fetch_source
  unpack_source
  # Debian's Go 1.19 first on PATH (as debian/rules does), whatever else is installed.
  export PATH="/usr/lib/go/bin:$PATH"
  export GOPATH="$K8S_GOPATH" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
  # Keep Go's caches with the tree, so deleting $K8S_HOME frees everything.
  export GOCACHE="$K8S_HOME/gocache"
  cd "$K8S_TREE"
  # The OpenAPI definitions are not in the tarball; the apiserver does not compile
  # without them. Marker file, so an interrupted run regenerates.
  if [ ! -f .airlock-openapi ]; then
    log "generating OpenAPI definitions (make gen_openapi)"
    make gen_openapi >&2
    touch .airlock-openapi
  fi
  # Same -X flags as hack/lib/version.sh would give a release build (in GOPATH mode the
  # vendored packages live under k8s.io/kubernetes/vendor/...; the plain paths are
  # harmless extras).
  local ldflags="-s -w" pkg key val
  local -A vars=(
    [gitVersion]="v$K8S_VERSION" [gitMajor]=1 [gitMinor]=20
    [gitCommit]=faecb196815e248d3ecfb03c680a4507229c2a56 [gitTreeState]=archive
    [buildDate]="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  )
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    for key in "${!vars[@]}"; do
      val="${vars[$key]}"
      ldflags+=" -X k8s.io/kubernetes/vendor/$pkg.$key=$val -X $pkg.$key=$val"
    done
  done
  mkdir -p "$K8S_BIN"
  # Into a scratch directory first, so an interrupted build never leaves a binary that
  # looks finished; two builds at once (services.sh and a by-hand node.sh) do not share one.
  local out pkgs=()
  out="$(mktemp -d "$K8S_BIN/.build.XXXXXX")"
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  log "go build ${missing[*]}"
  go build -ldflags "$ldflags" -o "$out/" "${pkgs[@]}" || { rm -rf "$out"; die "go build ${missing[*]} failed"; }
  for b in "${missing[@]}"; do mv "$out/$b" "$K8S_BIN/$b"; done
  rm -rf "$out"
  log "kubernetes $K8S_VERSION built in $((SECONDS - t0))s into $K8S_BIN: ${missing[*]}"
)

# ---------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------

# `build` takes binary names, not an instance.
if [ "${1:-}" = build ]; then
  shift
  build "$@"
  exit 0
fi

INSTANCE="${2:-${AIRLOCK_KUBE_INSTANCE:-managed}}"
case "$INSTANCE" in
  managed) DEF_API=6443 DEF_ETCD=2379 ;;
  management) DEF_API=6444 DEF_ETCD=2381 ;;
  faults) DEF_API=6445 DEF_ETCD=2383 ;;
  *) die "unknown instance '$INSTANCE' (want managed, management or faults)" ;;
esac
UPPER="$(echo "$INSTANCE" | tr '[:lower:]' '[:upper:]')"
# Per-instance overrides, e.g. AIRLOCK_KUBE_MANAGED_APISERVER_PORT.
v="AIRLOCK_KUBE_${UPPER}_APISERVER_PORT" && API_PORT="${!v:-$DEF_API}"
v="AIRLOCK_KUBE_${UPPER}_ETCD_PORT" && ETCD_PORT="${!v:-$DEF_ETCD}"
v="AIRLOCK_KUBE_${UPPER}_ETCD_PEER_PORT" && ETCD_PEER_PORT="${!v:-$((ETCD_PORT + 1))}"
DIR="$AIRLOCK_STATE/kube-$INSTANCE"
PKI="$DIR/pki"
KUBECONFIG_FILE="$DIR/kubeconfig"
# Pid/log names: kube-<instance>-etcd, -apiserver, -controller-manager.
P="kube-$INSTANCE"

# gen_pki — CA, apiserver serving cert, service-account key pair, admin client cert,
# tokens. Kept across restarts (so kubeconfigs stay valid); `clean` removes them.
gen_pki() {
  [ -f "$PKI/.done" ] && return 0
  rm -rf "$PKI"
  pki_ca "$PKI" "airlock-test-$INSTANCE-ca"
  pki_leaf "$PKI" apiserver "/CN=kube-apiserver" server \
    "IP:127.0.0.1, IP:10.0.0.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"
  pki_leaf "$PKI" admin "/O=system:masters/CN=airlock-admin-cert" client
  pki_service_account_keys "$PKI"
  (
    umask 077
    # Static bearer tokens: token,user,uid,"groups". Both are cluster admins.
    local admin_token kcm_token
    admin_token="$(openssl rand -hex 16)"
    kcm_token="$(openssl rand -hex 16)"
    {
      echo "$admin_token,airlock-admin,airlock-admin,\"system:masters\""
      echo "$kcm_token,system:kube-controller-manager,kcm,\"system:masters\""
    } >"$PKI/tokens.csv"
    echo "$admin_token" >"$PKI/admin.token"
    echo "$kcm_token" >"$PKI/kcm.token"
  )
  touch "$PKI/.done"
}

# instance_kubeconfig FILE TOKEN
instance_kubeconfig() {
  write_kubeconfig "$1" "airlock-$INSTANCE" "airlock-$INSTANCE-admin" "https://127.0.0.1:$API_PORT" "$PKI/ca.crt" token "$2"
}

start() {
  build
  ensure_pkgs etcd-server openssl curl
  mkdir -p "$DIR"
  gen_pki
  instance_kubeconfig "$KUBECONFIG_FILE" "$(cat "$PKI/admin.token")"
  instance_kubeconfig "$DIR/controller-manager.kubeconfig" "$(cat "$PKI/kcm.token")"

  start_etcd "$P-etcd" "airlock-$INSTANCE" "$DIR/etcd-data" "$ETCD_PORT" "$ETCD_PEER_PORT"
  start_apiserver "$P-apiserver" "$DIR" "$ETCD_PORT" 127.0.0.1 "$API_PORT" 10.0.0.0/24 --authorization-mode=RBAC

  if ! is_running "$P-controller-manager"; then
    # No serving ports (two instances would collide on 10257/10252); leader election
    # off (single instance, faster start). The SA key lets it mint token Secrets.
    start_bg "$P-controller-manager" "$K8S_BIN/kube-controller-manager" \
      --kubeconfig="$DIR/controller-manager.kubeconfig" \
      --secure-port=0 --port=0 --leader-elect=false \
      --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
      --cluster-name="airlock-$INSTANCE" --controllers='*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-route,-service,-attachdetach,-persistentvolume-binder,-persistentvolume-expander,-pvc-protection,-pv-protection,-ttl,-bootstrapsigner,-tokencleaner' \
      --profiling=false
  fi
  for ((i = 0; i < 60; i++)); do
    "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get ns default >/dev/null 2>&1 && break
    sleep 0.5
  done
  "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get ns default >/dev/null ||
    die "kubectl get ns fails on $INSTANCE"
  # The default ServiceAccount comes from the controller manager; wait briefly.
  for ((i = 0; i < 60; i++)); do
    "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n default get serviceaccount default >/dev/null 2>&1 && break
    exited "$P-controller-manager" && die "kube-controller-manager ($INSTANCE) exited; see $(log_file "$P-controller-manager")"
    sleep 0.5
  done
  "$AIRLOCK_KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n default get serviceaccount default >/dev/null 2>&1 ||
    log "warning: default ServiceAccount not created yet on $INSTANCE"

  log "Kubernetes v$K8S_VERSION ($INSTANCE) ready at https://127.0.0.1:$API_PORT"
  log "  kubeconfig: $KUBECONFIG_FILE   (CA: $PKI/ca.crt, admin token: $PKI/admin.token)"
  log "  kubectl:    $AIRLOCK_KUBECTL --kubeconfig $KUBECONFIG_FILE get ns"
  print_stop_hint "$P-controller-manager" "$P-apiserver" "$P-etcd"
  log "stop: $0 stop $INSTANCE"
}

stop() {
  stop_pid "$P-controller-manager"
  stop_pid "$P-apiserver"
  stop_pid "$P-etcd"
}

status() { print_status "$P-etcd" "$P-apiserver" "$P-controller-manager"; }

env_lines() {
  cat <<EOF
export KUBECONFIG=$KUBECONFIG_FILE
export AIRLOCK_KUBECONFIG_$UPPER=$KUBECONFIG_FILE
export AIRLOCK_KUBECTL=$AIRLOCK_KUBECTL
EOF
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  stop-apiserver) stop_pid "$P-apiserver" ;;
  status) status ;;
  env) env_lines ;;
  # Stop and forget this instance's data, certificates and tokens.
  clean) stop; rm -rf "$DIR" ;;
  *) echo "usage: $0 [start|stop|stop-apiserver|status|env|clean] [managed|management|faults] | build [BINARY...]" >&2; exit 2 ;;
esac
