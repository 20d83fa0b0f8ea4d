#!/usr/bin/env bash
# Carrying a fleet's bundles out of the registry:
#   full export: airlock-publisher export of every cluster to an oci-archive
#     vs  a skopeo copy loop, one repository at a time, into one OCI layout
#   delta export: export --since the full archive, after one ConfigMap used by a tenth of
#     the clusters changed: the delta archive's bytes vs the bytes that really changed
# The fleet is hack/bench/gen-fleet.py's (CLUSTERS clusters: 1,000; quick 5), published
# to a repository prefix of its own on the plain-HTTP registry, so runs never share data.
# "Really changed" is computed from two full exports, before and after the change: the
# blobs (manifests included) only the second holds. The export's own newBytes is recorded
# beside it.
#
# Usage: hack/bench/mirror.sh   (environment: see measure.sh; hack/bench.sh runs it)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then CLUSTERS=5; else CLUSTERS=1000; fi
BENCH_SERVERS="registry-plain"
DATA="$BENCH_OUT/mirror"

need_binaries
need_services
bench_keys
ensure_pkgs skopeo
PREFIX="airlock-bench/$(date +%Y%m%d%H%M%S)-$$"
FROM="oci+http://$AIRLOCK_REGISTRY/$PREFIX"
rm -rf "$DATA"
mkdir -p "$DATA"

# publish NAME [--change] — writes the fleet (changed or not) and publishes it to $FROM.
publish() {
  python3 "$HACK_DIR/bench/gen-fleet.py" --out "$DATA/fleet" --clusters "$CLUSTERS" --seed "$SEED" "${@:2}"
  timed "publish-$1" -- "$BIN_DIR/airlock-publisher" publish --from-dir "$DATA/fleet" --to "$FROM" \
    --key "$KEY" --keyring "$KEYRING"
}

# export_cmd ARCHIVE [--since PREVIOUS] — the export command line, as an array in CMD.
export_cmd() {
  CMD=("$BIN_DIR/airlock-publisher" export --from "$FROM" --to "oci-archive:$1" --keyring "$KEYRING" "${@:2}")
}

# skopeo_loop LAYOUT CLUSTER... — what an operator scripts without Airlock.
skopeo_loop() {
  local layout="$1" cluster
  shift
  for cluster in "$@"; do
    skopeo copy --quiet --src-tls-verify=false "docker://$AIRLOCK_REGISTRY/$PREFIX/$cluster:latest" \
      "oci:$layout:$cluster:latest" || return 1
  done
}
export -f skopeo_loop
export AIRLOCK_REGISTRY PREFIX

# blob_sizes ARCHIVE — "size path" of every blob in an OCI archive, sorted for join.
blob_sizes() { tar -tvf "$1" | awk '$6 ~ /^blobs\/sha256\// { print $3, $6 }' | LC_ALL=C sort -k2; }

log "publishing $CLUSTERS clusters to $FROM"
publish full
fact clusters count "$CLUSTERS"

log "row 8: full export vs skopeo ($BENCH_RUNS runs each)"
for run in $(seq "$BENCH_RUNS"); do
  export_cmd "$DATA/full-$run.tar"
  timed "export-full-$run" -- "${CMD[@]}"
  keep export.full.airlock
  add export.full.airlock.bytes "$(stat -c %s "$DATA/full-$run.tar")"
done
note export.full.airlock.cmd "${CMD[*]}"
# The export's own count of the clusters' blobs: per cluster (totalBytes), and distinct.
fact export.full.fetched_bytes bytes "$(jq .totalBytes "$DATA/full-1.tar.index.json")"
fact export.full.unique_bytes bytes "$(jq .newBytes "$DATA/full-1.tar.index.json")"
export_cmd "$DATA/full-profile.tar"
profile export-full -- "${CMD[@]}"
mapfile -t clusters < <(jq -r '.clusters[].cluster' "$DATA/full-1.tar.index.json")
[ "${#clusters[@]}" -eq "$CLUSTERS" ] || die "the export holds ${#clusters[@]} clusters, not $CLUSTERS"
for run in $(seq "$BENCH_RUNS"); do
  rm -rf "$DATA/skopeo-$run"
  timed "export-full-skopeo-$run" -- bash -c 'skopeo_loop "$@"' skopeo_loop "$DATA/skopeo-$run" "${clusters[@]}"
  keep export.full.skopeo
  add export.full.skopeo.bytes "$(du -sb "$DATA/skopeo-$run" | cut -f1)"
  rm -rf "$DATA/skopeo-$run"
done
note export.full.skopeo.cmd "for c in \$(clusters); do skopeo copy --src-tls-verify=false docker://$AIRLOCK_REGISTRY/$PREFIX/\$c:latest oci:$DATA/skopeo:\$c:latest; done"

# per_request NAME URL [CURL-OPTION...] — the registry's CPU seconds for one request,
# measured alone (one curl, one connection, the same URL again and again), as fact
# registry.NAME: set beside the export's own server CPU, it tells what bounds the full
# export.
per_request() {
  local name="$1" url="$2" n=300 s0 s1 i shown=""
  shift 2
  [ $# -eq 0 ] || shown="$(printf ' %q' "$@")"
  [ -z "$BENCH_QUICK" ] || n=30
  for ((i = 0; i < n; i++)); do printf 'url = "%s"\noutput = /dev/null\n' "$url"; done >"$DATA/requests.curl"
  s0="$(server_ticks)"
  curl -sf "$@" -K "$DATA/requests.curl" || die "curl could not read $url"
  s1="$(server_ticks)"
  fact "registry.$name" s "$(awk -v t=$((s1 - s0)) -v hz="$CLK_TCK" -v n="$n" 'BEGIN { print t / hz / n }')"
  note "registry.$name.cmd" "curl -sf${shown} -K FILE (FILE names $url $n times)"
}
manifest_url="http://$AIRLOCK_REGISTRY/v2/$PREFIX/${clusters[0]}/manifests/latest"
accept="Accept: application/vnd.oci.image.manifest.v1+json"
small="$(curl -sf -H "$accept" "$manifest_url" | jq -r '.layers | min_by(.size) | .digest')"
per_request blob_get "http://$AIRLOCK_REGISTRY/v2/$PREFIX/${clusters[0]}/blobs/$small"
per_request blob_head "http://$AIRLOCK_REGISTRY/v2/$PREFIX/${clusters[0]}/blobs/$small" --head
per_request manifest_get "$manifest_url" -H "$accept"
# The export fetches each distinct blob once; the archive holds those and the manifests.
fact export.full.blobs count "$(($(blob_sizes "$DATA/full-1.tar" | wc -l) - CLUSTERS))"
fact cores count "$(nproc)"

log "row 9: one ConfigMap changes for 10 % of the clusters; delta export ($BENCH_RUNS runs)"
publish change --change
for run in $(seq "$BENCH_RUNS"); do
  export_cmd "$DATA/delta-$run.tar" --since "$DATA/full-1.tar"
  timed "export-delta-$run" -- "${CMD[@]}"
  keep export.delta.airlock
  add export.delta.airlock.bytes "$(stat -c %s "$DATA/delta-$run.tar")"
  add export.delta.airlock.new_bytes "$(jq .newBytes "$DATA/delta-$run.tar.index.json")"
done
note export.delta.airlock.cmd "${CMD[*]}"
# What really changed, independently of --since: the blobs (manifests included) a full
# export after the change holds and the one before did not.
export_cmd "$DATA/full-after.tar"
timed export-full-after -- "${CMD[@]}"
changed_bytes="$(LC_ALL=C join -1 2 -2 2 -v 1 <(blob_sizes "$DATA/full-after.tar") <(blob_sizes "$DATA/full-1.tar") \
  | awk '{ s += $2 } END { print s + 0 }')"
fact export.delta.changed_clusters count "$(jq '.clusters | length' "$DATA/delta-1.tar.index.json")"
fact export.delta.changed_bytes bytes "$changed_bytes"
emit export.full.airlock export.full.skopeo export.delta.airlock
rm -f "$DATA"/full-[2-9]*.tar "$DATA"/delta-[2-9]*.tar "$DATA/full-after.tar" "$DATA/full-profile.tar"
log "done: rows 8-9 in $RESULTS"
