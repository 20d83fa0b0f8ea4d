#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed number of executions and prints one line per
# target (executions, seconds, findings). Crashes land in fuzz/artifacts/<target>/; turn
# each into a regression test before fixing it.
#
# Usage: hack/fuzz.sh [RUNS]   (default 200000 executions per target)
#
# libFuzzer needs nightly-only compiler flags; the stable toolchain accepts them with
# RUSTC_BOOTSTRAP=1, which this script sets for its own builds only.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/../fuzz"
runs="${1:-200000}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
printf '%-14s %12s %8s %s\n' target executions seconds findings
for target in $(cargo fuzz list); do
  start=$SECONDS
  mkdir -p "corpus/$target"
  if cargo fuzz run "$target" "corpus/$target" -- -runs="$runs" -max_len=65536 >"/tmp/fuzz-$target.log" 2>&1; then
    findings=0
  else
    findings=$(find "artifacts/$target" -type f 2>/dev/null | wc -l)
  fi
  execs=$(grep -Eo 'Done [0-9]+ runs' "/tmp/fuzz-$target.log" | grep -Eo '[0-9]+' || echo "?")
  printf '%-14s %12s %8s %s\n' "$target" "$execs" "$((SECONDS - start))" "$findings"
done
