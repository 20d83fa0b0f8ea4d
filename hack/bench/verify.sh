#!/usr/bin/env bash
# `airlock-puller verify` of a bundle of about 10 MB of manifests (1,000
# objects, ConfigMaps padded; quick: 200 kB) in an OCI layout, against `sha256sum` of the
# same bytes: the bundle's parts as canonical tars (bundles-format.md 3.1), the content the
# signature covers, one file per part. For reference, also `sha256sum` of the part blobs
# as stored (gzip, far fewer bytes) and `gzip -dc | sha256sum` of each part, the
# least a verifier can do with them, since a part's identity is the digest of its
# uncompressed tar (3.4, 8.12).
#
# Usage: hack/bench/verify.sh   (environment: see measure.sh; hack/bench.sh runs it)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then BYTES=200000; else BYTES=10000000; fi
CLUSTER=airlock-bench/managed
DATA="$BENCH_OUT/verify"
PART_MEDIA_TYPE=application/vnd.airlock.part.v1.tar+gzip

need_binaries
bench_keys
python3 "$HACK_DIR/bench/gen-objects.py" --out "$DATA" --objects 1000 --seed "$SEED" --target-bytes "$BYTES"
rm -rf "$DATA/layout"
timed verify-publish -- "$BIN_DIR/airlock-publisher" publish --from-dir "$DATA/management" \
  --to "oci-layout:$DATA/layout" --key "$KEY" --keyring "$KEYRING"

# The part blobs of the cluster's latest manifest (bundles-format.md 9.1, 9.3).
manifest="$(jq -r --arg ref "$CLUSTER:latest" \
  '.manifests[] | select(.annotations."org.opencontainers.image.ref.name" == $ref) | .digest' \
  "$DATA/layout/index.json")"
[ -n "$manifest" ] || die "no $CLUSTER:latest in $DATA/layout/index.json"
mapfile -t blobs < <(jq -r --arg t "$PART_MEDIA_TYPE" '.layers[] | select(.mediaType == $t) | .digest' \
  "$DATA/layout/blobs/sha256/${manifest#sha256:}" | sed "s|^sha256:|$DATA/layout/blobs/sha256/|")
fact verify.parts count "${#blobs[@]}"
fact verify.blob_bytes bytes "$(cat "${blobs[@]}" | wc -c)"
# The bundle's bytes, written out once so that hashing them reads a file as the blobs are.
rm -rf "$DATA/tars"
mkdir -p "$DATA/tars"
tars=()
for b in "${blobs[@]}"; do
  tars+=("$DATA/tars/${b##*/}.tar")
  gzip -dc "$b" >"${tars[-1]}"
done
fact verify.tar_bytes bytes "$(cat "${tars[@]}" | wc -c)"

gunzip_sha256() { local b; for b in "$@"; do gzip -dc "$b" | sha256sum; done; }
export -f gunzip_sha256
CMD=("$BIN_DIR/airlock-puller" verify --source "oci-layout:$DATA/layout" --cluster "$CLUSTER" --keyring "$KEYRING")
log "row 10: verify vs sha256sum ($BENCH_RUNS runs each)"
for run in $(seq "$BENCH_RUNS"); do
  timed "verify-airlock-$run" -- "${CMD[@]}"
  keep verify.airlock
  timed "verify-sha256sum-$run" -- sha256sum "${tars[@]}"
  keep verify.sha256sum
  timed "verify-sha256sum-gz-$run" -- sha256sum "${blobs[@]}"
  keep verify.sha256sum_gz
  timed "verify-gunzip-$run" -- bash -c 'gunzip_sha256 "$@"' gunzip_sha256 "${blobs[@]}"
  keep verify.gunzip_sha256
done
note verify.airlock.cmd "${CMD[*]}"
note verify.sha256sum.cmd "sha256sum $DATA/tars/<each part's tar>"
note verify.sha256sum_gz.cmd "sha256sum $DATA/layout/blobs/sha256/<each part blob>"
note verify.gunzip_sha256.cmd "for b in <each part blob>; do gzip -dc \$b | sha256sum; done"
profile verify -- "${CMD[@]}"
emit verify.airlock verify.sha256sum verify.sha256sum_gz verify.gunzip_sha256
log "done: row 10 in $RESULTS"
