#!/usr/bin/env bash
# The library-level micro-benchmarks (criterion): canonical tar, SHA-256, gzip,
# verifying a 10 MB part next to its floor, signing and checking a signature
# (bundle/benches/contract.rs), and selecting 20 profiles for 10,000 clusters
# (publisher/benches/selection.rs). Criterion keeps its estimates under
# $BENCH_OUT/criterion, which report.py reads. In quick mode warm-up and measurement are
# cut to a fraction of a second and the benchmarks built unoptimized: CI's figures show the
# benchmarks run, not how fast.
#
# Usage: hack/bench/micro.sh   (environment: see measure.sh; hack/bench.sh runs it)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then
  CRITERION_ARGS=(--warm-up-time 0.1 --measurement-time 0.2 --sample-size 10)
else
  CRITERION_ARGS=()
fi
export CRITERION_HOME="$BENCH_OUT/criterion"
rm -rf "$CRITERION_HOME"

# bench NAME CARGO-ARGS... — one criterion bench target, its output in $LOGS/micro-NAME.log.
bench() {
  local name="$1"
  shift
  log "micro-benchmarks: $name"
  (cd "$REPO" && cargo bench --profile "$BENCH_CARGO_PROFILE" --locked "$@" -- "${CRITERION_ARGS[@]}") >"$LOGS/micro-$name.log" 2>&1 \
    || { tail -n 25 "$LOGS/micro-$name.log" >&2; die "cargo bench $* failed (log: $LOGS/micro-$name.log)"; }
  note "micro.$name.cmd" "cargo bench --profile $BENCH_CARGO_PROFILE --locked $*${CRITERION_ARGS[*]:+ -- ${CRITERION_ARGS[*]}}"
}

bench contract -p airlock-bundle --features testing --bench contract
bench selection -p airlock-publisher --features bench --bench selection
log "done: criterion estimates in $CRITERION_HOME"
