#!/usr/bin/env bash
# airlock-puller against kubectl on the managed kube-apiserver, same objects, same run:
#   first sync into empty namespaces    vs  kubectl apply --server-side (CRD, wait, rest)
#   second sync, nothing changed        vs  kubectl apply --server-side again
#   drift check, one object edited      vs  kubectl diff --server-side
#   peak RSS of the first syncs
# Sizes: SMALL objects (1,000; quick 20) for the syncs and their RSS, LARGE (5,000; quick
# 40) for the second sync and RSS, DRIFT (1,000; quick 20, as kubectl diff is slow per
# object) for the drift check.
# Quick mode syncs the large size for the first time once per tool, not $BENCH_RUNS times:
# every first sync costs a namespace deletion, slow even for an empty namespace (the
# namespace controller waits seconds before it starts on one).
# Each data set (small, large, drift) has namespaces and a state namespace of its own.
# Before a first sync its namespaces and the CRD are deleted and their deletion waited
# for; the other data sets' namespaces go in the same wave, except before kubectl's first
# sync, where they may stay idle. The drift check's setup is not measured: the other data
# sets' namespaces are deleted while it runs and waited for before its first measurement,
# so no deletion runs under a measured command. Nothing is waited for at the end: the next
# run waits for the names it reuses. API requests are counted on one extra run each, from
# the client's own request log (the puller's kube_client debug lines, kubectl -v=6), so
# every request counts: the puller's /version, Lease, state Secret and report ConfigMap
# included; at the small size, a first sync's requests are counted so too.
#
# Usage: hack/bench/puller.sh [--small-only]   (environment: see measure.sh; hack/bench.sh
# runs it)
#   --small-only  the small size's syncs and RSS only (rows 1, 2 and 4), without the large
#                 size and the drift check: the short run that measures a first sync
set -euo pipefail
SMALL_ONLY=
case "${1:-}" in
  --small-only) SMALL_ONLY=1 ;;
  "") ;;
  *) echo "usage: $0 [--small-only]" >&2 && exit 2 ;;
esac
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then SMALL=20 LARGE=40 DRIFT=20; else SMALL=1000 LARGE=5000 DRIFT=1000; fi
CLUSTER=airlock-bench/managed
# Per data set: the prefix of its namespaces and the puller's state namespace.
declare -A PREFIX=([small]=airlock-bench-app- [large]=airlock-bench-large-app- [drift]=airlock-bench-drift-app-)
declare -A STATE_NS=([small]=airlock-bench-state [large]=airlock-bench-large-state [drift]=airlock-bench-drift-state)
BENCH_SERVERS="kube-managed-apiserver kube-managed-etcd"
DATA="$BENCH_OUT/puller"

need_binaries
need_services
bench_keys
kc() { "$AIRLOCK_KUBECTL" --kubeconfig "$AIRLOCK_KUBECONFIG_MANAGED" "$@"; }

# prepare NAME OBJECTS SYNC_MODE — generates the objects and publishes their bundle to
# the OCI layout $DATA/NAME/layout.
prepare() {
  local dir="$DATA/$1"
  python3 "$HACK_DIR/bench/gen-objects.py" --out "$dir" --objects "$2" --seed "$SEED" --sync-mode "$3" \
    --namespace-prefix "${PREFIX[$1]}"
  printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "${STATE_NS[$1]}" >>"$dir/namespaces.yaml"
  rm -rf "$dir/layout"
  "$BIN_DIR/airlock-publisher" publish --from-dir "$dir/management" --to "oci-layout:$dir/layout" --key "$KEY" \
    --keyring "$KEYRING" >"$LOGS/publish-$1.log" 2>&1 || die "publish of $1 failed (log: $LOGS/publish-$1.log)"
}

# others DATASET — `-f namespaces.yaml` of every other data set, in the array OTHERS.
others() {
  local set
  OTHERS=()
  for set in "${!PREFIX[@]}"; do
    # A data set --small-only did not prepare has no namespaces to delete.
    [ "$set" = "$1" ] || [ ! -f "$DATA/$set/namespaces.yaml" ] || OTHERS+=(-f "$DATA/$set/namespaces.yaml")
  done
}

# reset DATASET [--keep-others] — deletes the CRD and the namespaces of DATASET and, unless
# --keep-others, of the other data sets, waits until they are gone, and creates DATASET's
# namespaces again, empty. A first sync needs only its own namespaces empty and the CRD
# gone: the other data sets' objects may sit idle in theirs, as another application's
# would, until the next reset, which saves a namespace deletion.
reset() {
  local dir="$DATA/$1"
  OTHERS=()
  [ "${2:-}" = --keep-others ] || others "$1"
  {
    kc delete -f "$dir/namespaces.yaml" "${OTHERS[@]}" --ignore-not-found --wait --timeout=600s
    kc delete -f "$dir/kubectl/00-crds" --ignore-not-found --wait --timeout=300s
    kc apply -f "$dir/namespaces.yaml"
  } >>"$LOGS/reset.log" 2>&1 || die "could not reset the namespaces (log: $LOGS/reset.log)"
}

# sync_cmd DATASET REPORT_DIR — the puller command line, as an array in CMD.
sync_cmd() {
  mkdir -p "$2"
  CMD=("$BIN_DIR/airlock-puller" sync --source "oci-layout:$DATA/$1/layout" --cluster "$CLUSTER"
    --keyring "$KEYRING" --kubeconfig "$AIRLOCK_KUBECONFIG_MANAGED" --state-namespace "${STATE_NS[$1]}"
    --report-to "$2")
}

# last_report DIR FIELD — a field of the newest report the puller wrote into DIR.
last_report() {
  local file
  file="$(find "$1" -name 'report-*.json' | sort | tail -n 1)"
  [ -n "$file" ] || die "no report in $1"
  jq -r "$2" "$file"
}

# The kubectl side: the CRD must be established before its instances can be applied.
kubectl_first() {
  local dir="$DATA/$1/kubectl"
  kc apply --server-side -f "$dir/00-crds" &&
    kc wait --for condition=established --timeout=120s -f "$dir/00-crds" &&
    kc apply --server-side -f "$dir/10-objects"
}
kubectl_reapply() { kc apply --server-side -R -f "$DATA/$1/kubectl" "${@:2}"; }
# --force-conflicts: the hand edit made another field manager own the edited field.
kubectl_diff() { kc diff --server-side --force-conflicts -R -f "$DATA/$1/kubectl" "${@:2}"; }
export -f kc kubectl_first kubectl_reapply kubectl_diff
export AIRLOCK_KUBECTL AIRLOCK_KUBECONFIG_MANAGED DATA

# count_puller KEY LOG REPORT_DIR — counts every request in a JSON debug log of the
# puller, and how many the engine reported itself.
count_puller() {
  local total engine breakdown
  total="$(jq -rR 'fromjson? | select(.message == "requesting") | .span."http.method"' "$2" | wc -l)"
  engine="$(last_report "$3" .apiRequests)"
  breakdown="$(jq -rR 'fromjson? | select(.message == "requesting") | "\(.span."http.method") \(.span."http.url")"' "$2" \
    | sed -E 's|https?://[^/]+||; s|\?.*||; s|/namespaces/[^/]+/|/namespaces/NS/|; s|/[^/]+$|/NAME|' \
    | sort | uniq -c | sort -rn | awk '{ printf "%s%s %s ×%s", sep, $2, $3, $1; sep = "; " }')"
  add "$1.requests" "$total"
  add "$1.engine_requests" "$engine"
  note "$1.requests" "$total requests ($engine by the engine): $breakdown"
}

# count_kubectl KEY LOG — counts the requests kubectl -v=6 logged.
count_kubectl() {
  local total breakdown
  total="$(grep -cE '\] (GET|POST|PUT|PATCH|DELETE) https?://' "$2" || true)"
  breakdown="$(grep -oE '\] (GET|POST|PUT|PATCH|DELETE) ' "$2" | sort | uniq -c \
    | awk '{ printf "%s%s ×%s", sep, $3, $1; sep = "; " }')"
  add "$1.requests" "$total"
  note "$1.requests" "$total requests: $breakdown"
}

# first_and_second SIZE — first and second syncs and their peak RSS at one size (small or
# large).
first_and_second() {
  local size="$1" set="$1" run reports="$DATA/$1/reports" first_runs="$BENCH_RUNS"
  if [ -n "$BENCH_QUICK" ] && [ "$size" = large ]; then first_runs=1; fi
  for run in $(seq "$first_runs"); do
    reset "$set" --keep-others
    timed "first-$set-kubectl-$run" -- bash -c "kubectl_first $set"
    keep "first.$size.kubectl"
    reset "$set"
    sync_cmd "$set" "$reports/first-$run"
    timed "first-$set-airlock-$run" -- "${CMD[@]}"
    keep "first.$size.airlock"
    add "first.$size.airlock.engine_requests" "$(last_report "$reports/first-$run" .apiRequests)"
  done
  note "first.$size.airlock.cmd" "${CMD[*]}"
  if [ "$size" = small ]; then
    # What a first sync asks of the API server, request by request, on one more run.
    reset "$set"
    sync_cmd "$set" "$reports/first-requests"
    timed "first-$set-airlock-requests" -- "${CMD[@]}" --log-format json --log info,kube_client=debug
    count_puller "first.$size.airlock" "$LOGS/first-$set-airlock-requests.log" "$reports/first-requests"
  fi
  note "first.$size.kubectl.cmd" "kubectl apply --server-side -f $DATA/$set/kubectl/00-crds && kubectl wait --for condition=established -f $DATA/$set/kubectl/00-crds && kubectl apply --server-side -f $DATA/$set/kubectl/10-objects"
  profile_first_sync "$size"

  # The last run was the puller's: its objects and state are in place. One kubectl apply
  # makes kubectl a co-owner, so its timed re-applies change nothing either.
  timed "second-$set-kubectl-warmup" -- bash -c "kubectl_reapply $set"
  sync_cmd "$set" "$reports/second"
  for run in $(seq "$BENCH_RUNS"); do
    timed "second-$set-airlock-$run" -- "${CMD[@]}"
    keep "second.$size.airlock"
    [ "$(last_report "$reports/second" .result)" = up-to-date ] || die "second sync of $set was not up to date"
  done
  for run in $(seq "$BENCH_RUNS"); do
    timed "second-$set-kubectl-$run" -- bash -c "kubectl_reapply $set"
    keep "second.$size.kubectl"
  done
  note "second.$size.airlock.cmd" "${CMD[*]}"
  note "second.$size.kubectl.cmd" "kubectl apply --server-side -R -f $DATA/$set/kubectl"
  timed "second-$set-airlock-requests" -- "${CMD[@]}" --log-format json --log info,kube_client=debug
  count_puller "second.$size.airlock" "$LOGS/second-$set-airlock-requests.log" "$reports/second"
  timed "second-$set-kubectl-requests" -- bash -c "kubectl_reapply $set -v=6"
  count_kubectl "second.$size.kubectl" "$LOGS/second-$set-kubectl-requests.log"
  profile "second-sync-$size" -- "${CMD[@]}"
  emit "first.$size.airlock" "first.$size.kubectl" "second.$size.airlock" "second.$size.kubectl"
}

# profile_first_sync SIZE — evidence for the first sync and its RSS: where it spends its CPU
# (small) and its memory at the peak (large). Leaves the puller's objects and state in place.
profile_first_sync() {
  [ -n "$BENCH_PROFILE" ] || return 0
  reset "$1"
  sync_cmd "$1" "$DATA/$1/reports/profile"
  if [ "$1" = small ]; then
    profile first-sync -- "${CMD[@]}"
  else
    heap_profile first-sync-heap -- "${CMD[@]}"
  fi
}

# edit N — changes a field the bundle sets on one object, as a hand edit would.
edit() {
  kc -n "${PREFIX[drift]}0" patch widgets.bench.airlock.dev widget-00000 --type merge \
    -p "{\"spec\":{\"size\":$((1000 + $1))}}" >>"$LOGS/drift-edits.log" 2>&1 || die "could not edit widget-00000"
}

# drift — the drift check, with the profiles in ContinuousWithDriftDetection, in namespaces
# and a state namespace of its own. kubectl applies the objects once first, so that, as for
# an operator who manages them with kubectl, its diff shows the edit only. kubectl diff
# logs its requests (-v=6) on every run: it fetches the OpenAPI document once per object,
# so a separate counting run would cost as much as a timed one, and the log costs nothing
# next to that.
drift() {
  local run reports="$DATA/drift/reports/drift"
  # The other data sets' objects would be listed with the drift check's (same cluster
  # label): they go while the setup, which is not measured, runs. Drift namespaces that a
  # failed run left behind are waited for.
  others drift
  {
    kc delete "${OTHERS[@]}" --ignore-not-found --wait=false
    kc delete -f "$DATA/drift/namespaces.yaml" --ignore-not-found --wait --timeout=600s
    kc apply -f "$DATA/drift/namespaces.yaml"
  } >>"$LOGS/reset.log" 2>&1 || die "could not create the drift namespaces (log: $LOGS/reset.log)"
  sync_cmd drift "$DATA/drift/reports/drift-setup"
  timed drift-setup -- "${CMD[@]}"
  timed drift-kubectl-warmup -- bash -c "kubectl_reapply drift"
  kc delete "${OTHERS[@]}" --ignore-not-found --wait --timeout=600s >>"$LOGS/reset.log" 2>&1 \
    || die "the other data sets' namespaces are still there (log: $LOGS/reset.log)"
  sync_cmd drift "$reports"
  for run in $(seq "$BENCH_RUNS"); do
    edit "$run"
    timed "drift-airlock-$run" -- "${CMD[@]}"
    keep drift.airlock
    add drift.airlock.found "$(last_report "$reports" .drift.found)"
  done
  for run in $(seq "$BENCH_RUNS"); do
    edit "$run"
    # kubectl diff exits 1 when it found a difference, which it must here.
    timed "drift-kubectl-$run" --ok 1 -- bash -c "kubectl_diff drift -v=6"
    keep drift.kubectl
  done
  count_kubectl drift.kubectl "$LOGS/drift-kubectl-1.log"
  note drift.airlock.cmd "${CMD[*]}   (profiles have syncMode: ContinuousWithDriftDetection)"
  note drift.kubectl.cmd "kubectl diff --server-side --force-conflicts -R -f $DATA/drift/kubectl -v=6"
  edit 0
  timed drift-airlock-requests -- "${CMD[@]}" --log-format json --log info,kube_client=debug
  count_puller drift.airlock "$LOGS/drift-airlock-requests.log" "$reports"
  # Kinds the drift check lists: those of the bundle's objects.
  fact drift.kinds count "$(grep -h '^kind:' -r "$DATA/drift/kubectl" | sort -u | wc -l)"
  emit drift.airlock drift.kubectl
}

# cleanup — leaves the managed cluster as it was, since other tests share it (and its pods
# and service IPs). It does not wait: nothing here needs the names again, and the next run
# waits for the ones it reuses.
cleanup() {
  local set
  for set in "${!PREFIX[@]}"; do
    [ -f "$DATA/$set/namespaces.yaml" ] || continue
    kc delete -f "$DATA/$set/namespaces.yaml" --ignore-not-found --wait=false >>"$LOGS/reset.log" 2>&1 || true
  done
  kc delete -f "$DATA/drift/kubectl/00-crds" --ignore-not-found --wait=false >>"$LOGS/reset.log" 2>&1 || true
}
trap cleanup EXIT

log "preparing $SMALL and $LARGE objects in $DATA"
prepare small "$SMALL" Continuous
if [ -z "$SMALL_ONLY" ]; then
  prepare large "$LARGE" Continuous
  prepare drift "$DRIFT" ContinuousWithDriftDetection
fi
fact objects.small count "$SMALL"
fact objects.large count "$LARGE"
fact objects.drift count "$DRIFT"

log "rows 1, 2, 4 at $SMALL objects ($BENCH_RUNS runs each)"
first_and_second small
if [ -z "$SMALL_ONLY" ]; then
  log "rows 2, 4 at $LARGE objects"
  first_and_second large
  log "row 3 at $DRIFT objects"
  drift
fi

log "cleaning up the managed cluster"
trap - EXIT
cleanup
log "done: rows 1-4 in $RESULTS"
