#!/usr/bin/env bash
# The management side reading a fleet's reports from one registry (bundles-format.md 14.7):
#   ingest, every report new: airlock-publisher ingest --from the registry --to-dir, one
#     pass (watch makes the same pass every --reports-every, and cannot be bounded)
#   ingest again, nothing new: the same pass over the same reports, every one read and
#     verified again, none written
#     vs  a shell loop per cluster of curl (the manifest), jq (its layer's digest) and curl
#     (the envelope): the least a user fetching the reports would script; it verifies and
#     records nothing. skopeo inspect would cost a process of its own and more per cluster.
# Beside them, the registry's own CPU per request (the floor: what Distribution spends to
# answer, read from its /proc/PID/stat), and the requests each made, counted in the
# registry's access log under this run's repository prefix. The fleet is CLUSTERS clusters
# (10,000; quick 20), registered by publisher/examples/bench-reports.rs with a report key
# each and their signed reports pushed to a prefix of their own.
#
# Usage: hack/bench/reports.sh   (environment: see measure.sh; hack/bench.sh runs it)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then CLUSTERS=20; else CLUSTERS=10000; fi
BENCH_SERVERS="registry-plain"
DATA="$BENCH_OUT/reports"

need_binaries
need_services
ensure_pkgs curl jq
PREFIX="airlock-bench-reports/$(date +%Y%m%d%H%M%S)-$$"
STORE="oci+http://$AIRLOCK_REGISTRY/$PREFIX"
ACCESS_LOG="$(log_file registry-plain)"
rm -rf "$DATA"
mkdir -p "$DATA"

log "building the fleet's generator (publisher/examples/bench-reports.rs)"
# As micro.sh builds the publisher: nothing more to compile after it.
if [ -n "$BENCH_QUICK" ]; then example=(--example bench-reports); else example=(-p airlock-publisher --example bench-reports); fi
(cd "$REPO" && cargo "${BENCH_CARGO_BUILD[@]}" "${example[@]}") \
  >"$LOGS/reports-build.log" 2>&1 || { tail -n 25 "$LOGS/reports-build.log" >&2; die "building bench-reports failed"; }
log "registering $CLUSTERS clusters and pushing their reports to $STORE"
timed reports-generate -- "$BIN_DIR/examples/bench-reports" --clusters "$CLUSTERS" --store "$STORE" \
  --to-dir "$DATA/clusters" --seed "$SEED"
fact reports.clusters count "$CLUSTERS"
fact reports.generate.wall s "$WALL"

# requests OFFSET — sets OURS to the registry's requests under $PREFIX that its access log
# holds after byte OFFSET, and OTHERS to the rest (other users of the shared registry, charged to
# the server CPU all the same).
requests() {
  local lines
  sleep 0.5 # the registry logs a request once its response is written
  lines="$(tail -c +"$(($1 + 1))" "$ACCESS_LOG" | grep -E '^[0-9.]+ - - \[[^]]*\] "[A-Z]+ ' || true)"
  OURS="$(grep -cF " /v2/$PREFIX/" <<<"$lines" || true)"
  OTHERS=$(($(grep -c . <<<"$lines" || true) - OURS))
}

# measure NAME KEY -- CMD... — times CMD and keeps its figures under KEY, with its
# requests, the other requests the registry served meanwhile, and its CPU per request.
measure() {
  local name="$1" key="$2" offset n
  shift 3
  offset="$(stat -c %s "$ACCESS_LOG")"
  timed "$name" -- "$@"
  keep "$key"
  requests "$offset"
  n="$OURS"
  [ "$n" -gt 0 ] || die "$name: the registry logged no request under $PREFIX"
  add "$key.requests" "$n"
  add "$key.requests_per_cluster" "$(awk -v n="$n" -v c="$CLUSTERS" 'BEGIN { print n / c }')"
  add "$key.other_requests" "$OTHERS"
  # Milliseconds: the unit of `add` is a count, and seconds per request read as zero.
  add "$key.server_ms_per_request" "$(awk -v s="$SERVER" -v n="$n" 'BEGIN { printf "%.4f", 1000 * s / n }')"
}

# outcome LOG OUTCOME — how many rows of an ingest's table end in OUTCOME (the table's
# columns are three spaces apart).
outcome() { grep -c "   $2\$" "$1" || true; }

# curl_loop OUT CLUSTER... — what a user scripts to fetch each cluster's newest report.
curl_loop() {
  local out="$1" cluster digest base
  shift
  for cluster in "$@"; do
    base="http://$AIRLOCK_REGISTRY/v2/$PREFIX/$cluster/reports"
    digest="$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$base/manifests/latest" \
      | jq -r '.layers[0].digest')" || return 1
    curl -sf -o "$out/${cluster/\//.}.json" "$base/blobs/$digest" || return 1
  done
}
export -f curl_loop
export AIRLOCK_REGISTRY PREFIX
mapfile -t clusters < <(find "$DATA/clusters" -name "*.sveltoscluster.yaml" -printf "%f\n" | LC_ALL=C sort | sed 's/\.sveltoscluster\.yaml$//; s/\./\//')
[ "${#clusters[@]}" -eq "$CLUSTERS" ] || die "the generator registered ${#clusters[@]} clusters, not $CLUSTERS"

INGEST=("$BIN_DIR/airlock-publisher" --log warn ingest --from "$STORE" --to-dir)
log "row 11: ingest $CLUSTERS clusters' reports from one registry vs a curl loop ($BENCH_RUNS runs each)"
for run in $(seq "$BENCH_RUNS"); do
  # A fresh copy of the registrations: the first pass of each run finds every report new.
  rm -rf "$DATA/target"
  cp -r "$DATA/clusters" "$DATA/target"
  measure "reports-ingest-new-$run" reports.new.airlock -- "${INGEST[@]}" "$DATA/target"
  [ "$(outcome "$LOGS/reports-ingest-new-$run.log" ingested)" -eq "$CLUSTERS" ] \
    || die "run $run: not every report ingested (log: $LOGS/reports-ingest-new-$run.log)"
  measure "reports-ingest-again-$run" reports.again.airlock -- "${INGEST[@]}" "$DATA/target"
  [ "$(outcome "$LOGS/reports-ingest-again-$run.log" "already ingested")" -eq "$CLUSTERS" ] \
    || die "run $run: the second pass found news (log: $LOGS/reports-ingest-again-$run.log)"
  rm -rf "$DATA/curl"
  mkdir -p "$DATA/curl"
  measure "reports-curl-$run" reports.curl -- bash -c 'curl_loop "$@"' curl_loop "$DATA/curl" "${clusters[@]}"
  [ "$(find "$DATA/curl" -name '*.json' | wc -l)" -eq "$CLUSTERS" ] || die "run $run: the curl loop fetched too few reports"
done
note reports.new.airlock.cmd "${INGEST[*]} $DATA/target (a fresh copy of the $CLUSTERS registrations)"
note reports.again.airlock.cmd "${INGEST[*]} $DATA/target (the same, right after)"
note reports.curl.cmd "for c in \$(clusters); do d=\$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' http://$AIRLOCK_REGISTRY/v2/$PREFIX/\$c/reports/manifests/latest | jq -r '.layers[0].digest'); curl -sf -o \$c.json http://$AIRLOCK_REGISTRY/v2/$PREFIX/\$c/reports/blobs/\$d; done"
note reports.generate.cmd "$BIN_DIR/examples/bench-reports --clusters $CLUSTERS --store $STORE --to-dir $DATA/clusters --seed $SEED"
fact reports.cores count "$(nproc)"
fact reports.envelope_bytes bytes "$(stat -c %s "$DATA/curl/${clusters[0]/\//.}.json")"
emit reports.new.airlock reports.again.airlock reports.curl
rm -rf "$DATA/target" "$DATA/curl"
log "done: row 11 in $RESULTS"
