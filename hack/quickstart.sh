#!/usr/bin/env bash
# The whole pull-mode loop on this machine, with no manual step:
#   build the tools; start a management and a managed Kubernetes API server; install the
#   Sveltos CRDs and examples/ in the management one; generate keys; register a pull-mode
#   cluster and apply its registration YAML to the managed one; publish; sync; carry the
#   report back and ingest it; print `kubectl get sveltoscluster -A`.
#
# Usage: hack/quickstart.sh [--store layout|oci|git] [--keep]
#   --store layout  bundles go to an OCI layout directory (default; no registry needed)
#   --store oci     bundles go to the local registry (Distribution 2.8 on 127.0.0.1:5000)
#   --store git     bundles go to the local Git server (git http-backend on 127.0.0.1:8418)
#   --keep          leave the services running at the end (default: stop what it started)
#
# Safe to run twice: keys and registration are reused, publish and sync are idempotent.
# The test API servers run no nodes, so the CronJob the registration creates never gets a
# pod; this script runs the same `airlock-puller sync` the CronJob would, with the same
# settings (the registration's ConfigMap and Secret), from this machine.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/.."

store_kind=layout keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store_kind="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

n=0
step() { n=$((n + 1)); printf '\n\033[1m==> %d. %s\033[0m\n' "$n" "$*" >&2; }

qs="${AIRLOCK_QUICKSTART_DIR:-$AIRLOCK_STATE/quickstart}"
mkdir -p "$qs"
cluster_ns=fleet cluster_name=edge-quickstart

step "Build airlock-publisher and airlock-puller"
cargo build --locked -p airlock-publisher -p airlock-puller >&2
bin="${CARGO_TARGET_DIR:-target}/debug"
publisher="$bin/airlock-publisher" puller="$bin/airlock-puller"

step "Start the management and the managed Kubernetes API servers (and the $store_kind store)"
started=()
# Remember what was not running before, to stop only that at the end.
for inst in management managed; do
  if ! "$HACK_DIR/kube.sh" status "$inst" >/dev/null 2>&1; then started+=("kube:$inst"); fi
  "$HACK_DIR/kube.sh" start "$inst" >&2
done
case "$store_kind" in
  layout) store="oci-layout:$qs/bundles" ;;
  oci)
    if ! "$HACK_DIR/registry.sh" status >/dev/null 2>&1; then started+=(registry); fi
    "$HACK_DIR/registry.sh" start >&2
    store="oci+http://127.0.0.1:${AIRLOCK_REGISTRY_PORT:-5000}/quickstart" ;;
  git)
    if ! "$HACK_DIR/git-server.sh" status >/dev/null 2>&1; then started+=(git); fi
    "$HACK_DIR/git-server.sh" start >&2
    [ -d "$AIRLOCK_STATE/git/repos/quickstart.git" ] || "$HACK_DIR/git-server.sh" new-repo quickstart >&2
    store="git+http://127.0.0.1:${AIRLOCK_GIT_HTTP_PORT:-8418}/quickstart.git" ;;
  *) die "--store must be layout, oci or git" ;;
esac
kubectl="$("$HACK_DIR/kube.sh" env managed | sed -n 's/^export AIRLOCK_KUBECTL=//p')"
mgmt="$AIRLOCK_STATE/kube-management/kubeconfig"
managed="$AIRLOCK_STATE/kube-managed/kubeconfig"
log "store: $store"

step "Install the Sveltos CRDs and apply examples/ to the management cluster"
"$kubectl" --kubeconfig "$mgmt" apply --server-side -f hack/crds/ >&2
"$kubectl" --kubeconfig "$mgmt" wait --for condition=established --timeout=60s -f hack/crds/ >&2
"$kubectl" --kubeconfig "$mgmt" apply --server-side -f examples/ >&2

step "Generate the publisher's signing key and the pullers' keyring"
if [ ! -f "$qs/keys/airlock.key" ]; then
  "$publisher" keygen --out-dir "$qs/keys" --name airlock >&2
else
  log "reusing $qs/keys"
fi

step "Register the pull-mode cluster $cluster_ns/$cluster_name and apply its registration to the managed cluster"
"$publisher" register cluster --kubeconfig "$mgmt" \
  --namespace "$cluster_ns" --cluster "$cluster_name" --pullmode \
  --labels region=eu,tier=prod --watch-namespaces web,monitoring \
  --source "$store" --keyring "$qs/keys/keyring.json" \
  --image "127.0.0.1:${AIRLOCK_REGISTRY_PORT:-5000}/airlock/puller:$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)" \
  --cronjob-api batch/v1beta1 >"$qs/registration.yaml"
"$kubectl" --kubeconfig "$managed" apply -f "$qs/registration.yaml" >&2

step "Publish every pull-mode cluster's bundle from the management cluster to $store"
"$publisher" publish --kubeconfig "$mgmt" --to "$store" --key "$qs/keys/airlock.key" --keyring "$qs/keys/keyring.json" >&2

step "Sync the managed cluster (what the puller's CronJob runs), with the registration's settings"
mkdir -p "$qs/etc" "$qs/reports"
"$kubectl" --kubeconfig "$managed" -n airlock-system get configmap airlock-puller -o jsonpath='{.data.config\.json}' >"$qs/etc/config.json"
"$kubectl" --kubeconfig "$managed" -n airlock-system get configmap airlock-puller -o jsonpath='{.data.keyring\.json}' >"$qs/etc/keyring.json"
report_key=()
if "$kubectl" --kubeconfig "$managed" -n airlock-system get secret airlock-report-key >/dev/null 2>&1; then
  "$kubectl" --kubeconfig "$managed" -n airlock-system get secret airlock-report-key -o jsonpath='{.data.report\.key}' | base64 -d >"$qs/etc/report.key"
  chmod 0600 "$qs/etc/report.key"
  report_key=(--report-key "$qs/etc/report.key")
fi
"$puller" sync --config "$qs/etc/config.json" --keyring "$qs/etc/keyring.json" \
  --kubeconfig "$managed" --report-to "$qs/reports" "${report_key[@]}" >&2

step "Carry the report back across the gap and ingest it"
"$puller" export-reports --from "$qs/reports" --to "$qs/reports.json" >&2
"$publisher" ingest --from "$qs/reports.json" --kubeconfig "$mgmt" >&2

step "Result: the management cluster sees the puller, and the objects are live in the managed cluster"
"$kubectl" --kubeconfig "$managed" get namespaces,configmaps,services,deployments,networkpolicies -A -l "airlock.dev/cluster=$cluster_ns.$cluster_name" >&2
if [ -z "$keep" ] && [ "${#started[@]}" -gt 0 ]; then
  log "stopping what this run started: ${started[*]} (use --keep to leave them running)"
  final=$("$kubectl" --kubeconfig "$mgmt" get sveltoscluster -A)
  for s in "${started[@]}"; do
    case "$s" in
      kube:*) "$HACK_DIR/kube.sh" stop "${s#kube:}" >&2 ;;
      registry) "$HACK_DIR/registry.sh" stop >&2 ;;
      git) "$HACK_DIR/git-server.sh" stop >&2 ;;
    esac
  done
  echo "$final"
else
  log "services left running; stop them with: hack/services.sh stop"
  "$kubectl" --kubeconfig "$mgmt" get sveltoscluster -A
fi
