#!/usr/bin/env bash
# The library-level micro-benchmarks (criterion): canonical tar, SHA-256, gzip,
# verifying a 10 MB part next to its floor, signing and checking a signature
# (bundle/benches/contract.rs), and selecting 20 profiles for 10,000 clusters
# (publisher/benches/selection.rs). Criterion keeps its estimates under
# $BENCH_OUT/criterion, which report.py reads. In quick mode warm-up and measurement are
# cut to a fraction of a second and the benchmarks built as the tests are: CI's figures show
# the benchmarks run, not how fast.
#
# Usage: hack/bench/micro.sh   (environment: see measure.sh; hack/bench.sh runs it)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"

if [ -n "$BENCH_QUICK" ]; then
  # `cargo test` runs a criterion bench once as a test unless told `--bench`, which
  # `cargo bench` passes itself.
  CRITERION_ARGS=(--bench --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10)
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
  (cd "$REPO" && cargo "${BENCH_CARGO_RUN[@]}" "$@" -- "${CRITERION_ARGS[@]}") >"$LOGS/micro-$name.log" 2>&1 \
    || { tail -n 25 "$LOGS/micro-$name.log" >&2; die "cargo ${BENCH_CARGO_RUN[*]} $* failed (log: $LOGS/micro-$name.log)"; }
  note "micro.$name.cmd" "cargo ${BENCH_CARGO_RUN[*]} $*${CRITERION_ARGS[*]:+ -- ${CRITERION_ARGS[*]}}"
}

# In quick mode `--workspace` selects the packages; the target name alone picks the bench.
if [ -n "$BENCH_QUICK" ]; then
  bench contract --bench contract
  bench selection --bench selection
else
  bench contract -p airlock-bundle --features testing --bench contract
  bench selection -p airlock-publisher --bench selection
fi
log "done: criterion estimates in $CRITERION_HOME"
