#!/usr/bin/env bash
# The whole pull-mode loop on this machine, as an operator runs it, with nothing done by
# hand after `helm install` and `kubectl apply`:
#   build the tools and the image (pushed to the local registry); start a single-node
#   cluster whose pods really run (hack/node.sh), which is here the management cluster as
#   well as the managed one, as a Sveltos management cluster often manages itself; install
#   the Sveltos CRDs and examples/; generate keys; register a pull-mode cluster; install the
#   publisher with its Helm chart (charts/airlock: `airlock-publisher watch` in a pod), which
#   publishes; `kubectl apply -f` the registration YAML. The registration's CronJob then runs
#   the puller every minute: it syncs and sends its signed report to the store, where the
#   publisher's pod picks it up, until `kubectl get sveltoscluster -A` shows READY true and
#   the node's VERSION.
#
# Usage: hack/quickstart.sh [--store layout|oci|git] [--keep]
#   --store layout  bundles go to an OCI layout directory (default), which the puller's
#                   pod mounts from this machine's disk (register --mount-host-path)
#   --store oci     bundles go to the local registry (Distribution 2.8 on 127.0.0.1:5000)
#   --store git     bundles go to the local Git server (git http-backend on 127.0.0.1:8418)
#   --keep          leave the services running at the end (default: stop what it started)
#
# Safe to run twice: keys (the report key too) and registration are reused, publish and
# sync are idempotent. Whatever this run started is stopped when it ends, also when it fails.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/.."

store_kind=layout keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store_kind="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
case "$store_kind" in layout | oci | git) ;; *) die "--store must be layout, oci or git" ;; esac

n=0
step() { n=$((n + 1)); printf '\n\033[1m==> %d. %s\033[0m\n' "$n" "$*" >&2; }

qs="${AIRLOCK_QUICKSTART_DIR:-$AIRLOCK_STATE/quickstart}"
mkdir -p "$qs"
cluster_ns=fleet cluster_name=edge-quickstart puller_ns=airlock-system publisher_ns=projectsveltos
registry="127.0.0.1:${AIRLOCK_REGISTRY_PORT:-5000}"
# The publisher's /healthz and /metrics, on the host's network as the pod is.
metrics_port="${AIRLOCK_QUICKSTART_METRICS_PORT:-19464}"
# The UID and GID the puller's image runs as (hack/image.sh, register's pod template).
puller_uid=65532

# What this run started, stopped on exit unless --keep; a run that fails stops it too, so
# the next run never finds half of it running.
started=()
finish() {
  local rc=$?
  if [ "${#started[@]}" -gt 0 ] && { [ -z "$keep" ] || [ "$rc" -ne 0 ]; }; then
    log "stopping what this run started: ${started[*]}"
    for s in "${started[@]}"; do
      case "$s" in
        node) "$HACK_DIR/node.sh" stop >&2 || true ;;
        registry) "$HACK_DIR/registry.sh" stop >&2 || true ;;
        git) "$HACK_DIR/git-server.sh" stop >&2 || true ;;
      esac
    done
  fi
  exit "$rc"
}
trap finish EXIT
# start NAME SCRIPT ARGS... — starts a service unless it runs, remembering that this run did;
# one that runs already (another run's --keep, hack/services.sh) is reused, and said so.
start() {
  local name="$1" script="$2"
  shift 2
  if "$script" status "$@" >/dev/null 2>&1; then
    log "$name runs already: reused, and left running at the end"
  else
    started+=("$name")
  fi
  "$script" start "$@" >&2
}

step "Build airlock-publisher and airlock-puller, and the puller's image"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
# The workspace's binaries, as hack/image.sh --debug builds them (one set of features).
cargo build --locked --workspace --bins >&2
bin="${CARGO_TARGET_DIR:-target}/debug"
publisher="$bin/airlock-publisher"
"$HACK_DIR/kube.sh" build kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet >&2
start registry "$HACK_DIR/registry.sh"
image=$("$HACK_DIR/image.sh" --debug --push "$registry")

step "Start the single-node cluster (and the $store_kind store)"
start node "$HACK_DIR/node.sh"
case "$store_kind" in
  layout) store="oci-layout:$qs/bundles" mount=(--mount-host-path) ;;
  oci) store="oci+http://$registry/quickstart" mount=() ;;
  git)
    start git "$HACK_DIR/git-server.sh"
    [ -d "$AIRLOCK_STATE/git/repos/quickstart.git" ] || "$HACK_DIR/git-server.sh" new-repo quickstart >&2
    store="git+http://127.0.0.1:${AIRLOCK_GIT_HTTP_PORT:-8418}/quickstart.git" mount=() ;;
esac
kubectl="$("$HACK_DIR/kube.sh" env management | sed -n 's/^export AIRLOCK_KUBECTL=//p')"
node="$AIRLOCK_STATE/kube-node/kubeconfig"
on_node() { "$kubectl" --kubeconfig "$node" --cache-dir "$AIRLOCK_STATE/kube-node/kubectl-cache" "$@"; }
log "store: $store"

step "Install the Sveltos CRDs and apply examples/ to the management cluster"
on_node apply --server-side -f hack/crds/ >&2
on_node wait --for condition=established --timeout=60s -f hack/crds/ >&2
on_node apply --server-side -f examples/ >&2

step "Generate the publisher's signing key, the pullers' keyring and the cluster's own keys"
if [ ! -f "$qs/keys/airlock.key" ]; then
  "$publisher" keygen --out-dir "$qs/keys" --name airlock >&2
fi
# Kept across runs: registering with a new report key would turn away the reports signed
# with the old one.
if [ ! -f "$qs/keys/report.key" ]; then
  "$publisher" keygen --out-dir "$qs/keys/report" --name report >&2
  mv "$qs/keys/report/report.key" "$qs/keys/report.key"
  rm -rf "$qs/keys/report"
fi
# Kept across runs for the same reason: a new age identity would leave the bundles sealed
# meanwhile to the old one unreadable until the new registration reaches the node.
if [ ! -f "$qs/keys/age-identity.txt" ]; then
  ensure_pkgs age
  age-keygen -o "$qs/keys/age-identity.txt" 2>/dev/null
fi

step "Register the pull-mode cluster"
register() {
  "$publisher" register cluster --kubeconfig "$node" \
    --namespace "$cluster_ns" --cluster "$cluster_name" --pullmode \
    --labels region=eu,tier=prod --watch-namespaces web,monitoring \
    --source "$store" --keyring "$qs/keys/keyring.json" --report-key-file "$qs/keys/report.key" \
    --age-identity-file "$qs/keys/age-identity.txt" \
    --image "$image" --cronjob-api batch/v1beta1 --schedule '*/1 * * * *' --report-every 1m \
    --host-network "${mount[@]}" --puller-namespace "$puller_ns"
}
# The SveltosCluster first, so that the publisher sees the cluster.
register >"$qs/registration.yaml"

step "Install the publisher with its Helm chart: airlock-publisher watch publishes to $store"
helm="$("$HACK_DIR/helm.sh" v3)"
values=(--set-string "store.url=$store" --set signing.secretName=airlock-signing-key)
if [ "$store_kind" = layout ]; then
  # The publisher's pod and the puller's write the layout as the image's user; its
  # directories are that group's to write, and stay so for what either adds.
  mkdir -p "$qs/bundles"
  chgrp -R "$puller_uid" "$qs/bundles"
  chmod -R g+rwX "$qs/bundles"
  find "$qs/bundles" -type d -exec chmod g+s {} +
  values+=(--set-json "extraVolumes=[{\"name\":\"bundles\",\"hostPath\":{\"path\":\"$qs/bundles\",\"type\":\"Directory\"}}]"
    --set-json "extraVolumeMounts=[{\"name\":\"bundles\",\"mountPath\":\"$qs/bundles\"}]")
fi
on_node create namespace "$publisher_ns" --dry-run=client -o yaml | on_node apply -f - >&2
on_node -n "$publisher_ns" create secret generic airlock-signing-key --dry-run=client -o yaml \
  --from-file=airlock.key="$qs/keys/airlock.key" --from-file=keyring.json="$qs/keys/keyring.json" | on_node apply -f - >&2
reference="${image%@*}"
# A new key (a fresh quickstart directory) restarts the pod, which reads its key at start.
key_digest=$(cat "$qs/keys/airlock.key" "$qs/keys/keyring.json" | sha256sum | cut -c1-16)
# The node has no pod network: the pod shares the host's, with its resolver.
"$helm" --kubeconfig "$node" upgrade --install airlock charts/airlock --namespace "$publisher_ns" \
  --set image.repository="${reference%:*}" --set-string image.tag="${reference##*:}" --set image.digest="${image#*@}" \
  --set hostNetwork=true --set dnsPolicy=None --set-json 'dnsConfig={"nameservers":["127.0.0.1"]}' \
  --set metrics.bindAddress=127.0.0.1 --set metrics.port="$metrics_port" \
  --set publish.debounce=1s --set reports.every=5s --set log.format=human \
  --set resources.requests.cpu=50m --set resources.requests.memory=64Mi \
  --set-string podAnnotations.airlock\\.dev/signing-key="$key_digest" \
  "${values[@]}" --wait --timeout 3m >&2
# The pod's first publish, before the puller looks for its bundle.
deadline=$((SECONDS + 120))
until curl -fsS "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null | awk '$1 ~ /^airlock_publish_runs_total\{result="(ok|partial)"\}$/ && $2 > 0 { ok = 1 } END { exit !ok }'; do
  [ "$SECONDS" -lt "$deadline" ] || { on_node -n "$publisher_ns" logs deploy/airlock --tail 20 >&2; die "the publisher's pod published nothing within 2 minutes"; }
  sleep 2
done
on_node -n "$publisher_ns" get deploy,pods >&2

step "Apply the registration YAML on the managed cluster: nothing else is done there by hand"
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# A Job an earlier run left active (its puller failed or hung, or the node stopped under it)
# blocks every scheduled run, the CronJob's concurrencyPolicy being Forbid, so this run would
# wait for nothing. Only the Jobs the puller's CronJob made go, with their pods; the
# CronJob forgets them at its next sync.
leftover=$(on_node -n "$puller_ns" get jobs -l app.kubernetes.io/name=airlock-puller -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name}{"\n"}{end}' |
  awk '$2 == "CronJob/airlock-puller" { print $1 }')
if [ -n "$leftover" ]; then
  mapfile -t jobs <<<"$leftover"
  log "deleting the puller's Jobs left by an earlier run: ${jobs[*]}"
  on_node -n "$puller_ns" delete jobs "${jobs[@]}" --cascade=foreground --ignore-not-found >&2
fi
on_node apply -f "$qs/registration.yaml" >&2

step "Wait for the CronJob's first run and for the cluster's report (about a minute)"
# A Job of this run, succeeded: the CronJob fires on the minute.
deadline=$((SECONDS + 180))
until on_node -n "$puller_ns" get jobs -o jsonpath='{range .items[?(@.status.succeeded==1)]}{.status.startTime}{"\n"}{end}' |
  awk -v since="$since" '$1 >= since { found = 1 } END { exit !found }'; do
  [ "$SECONDS" -lt "$deadline" ] || { on_node -n "$puller_ns" get cronjob,jobs,pods >&2; die "no puller run succeeded within 3 minutes"; }
  sleep 3
done
# A report of this run (every run reports: --report-every 1m), and the cluster ready.
reported() {
  on_node -n "$cluster_ns" get sveltoscluster "$cluster_name" \
    -o jsonpath='{.metadata.annotations.airlock\.dev/report-time} {.status.ready}' |
    awk -v since="$since" '$1 >= since && $2 == "true" { ok = 1 } END { exit !ok }'
}
until reported; do
  [ "$SECONDS" -lt "$deadline" ] || { on_node -n "$publisher_ns" logs deploy/airlock --tail 20 >&2; die "the cluster did not report ready within 3 minutes"; }
  sleep 2
done

step "Result: the puller runs on the node, the objects are live there, the management cluster sees it"
on_node -n "$puller_ns" get cronjob,jobs,pods -l app.kubernetes.io/name=airlock-puller >&2
pod=$(on_node -n "$puller_ns" get pods -l app.kubernetes.io/name=airlock-puller --sort-by=.metadata.creationTimestamp -o name | tail -n 1)
log "the last run, in $pod:"
on_node -n "$puller_ns" logs "$pod" | tail -n 3 >&2
on_node get namespaces,configmaps,services,deployments,networkpolicies -A -l "airlock.dev/cluster=$cluster_ns.$cluster_name" >&2
if [ -n "$keep" ]; then log "services left running; stop them with: hack/services.sh stop"; fi
on_node get sveltoscluster -A
