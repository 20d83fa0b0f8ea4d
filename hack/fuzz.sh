#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed number of executions and prints one line per
# target (executions, seconds, findings). Crashes land in fuzz/artifacts/<target>/; turn
# each into a regression test before fixing it.
#
# Usage: hack/fuzz.sh [RUNS [TARGET...]]   (default 200000 executions, every target)
# Exits non-zero when a target crashed or failed to run.
#
# A target starts from its checked-in seeds (fuzz/seeds/<target>/, read only) besides its
# corpus, and uses the dictionary fuzz/dict/<target>.dict when there is one: a template or
# YAML parser is rarely reached by guessing bytes.
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
shift $(($# > 0 ? 1 : 0))
targets="${*:-$(cargo fuzz list)}"
failed=0
for target in $targets; do
  start=$SECONDS
  log="/tmp/fuzz-$target.log"
  mkdir -p "corpus/$target" "artifacts/$target"
  # Only this run's crashes count: artifacts/ keeps earlier ones until they are fixed.
  marker="$(mktemp)"
  extra=()
  [ -d "seeds/$target" ] && extra+=("seeds/$target")
  options=(-runs="$runs" -max_len=65536 -print_final_stats=1)
  [ -f "dict/$target.dict" ] && options+=(-dict="dict/$target.dict")
  status=0
  cargo fuzz run "$target" "corpus/$target" "${extra[@]}" -- "${options[@]}" >"$log" 2>&1 || status=$?
  findings=$(find "artifacts/$target" -type f -newer "$marker" | wc -l)
  rm -f "$marker"
  if [ "$status" -ne 0 ] && [ "$findings" -eq 0 ]; then
    tail -n 20 "$log" >&2
    die "$target failed without a crash input (exit status $status); see $log"
  fi
  [ "$findings" -eq 0 ] || failed=1
  # libFuzzer stops at the first crash, before its "Done N runs" line; its final stats
  # are printed either way.
  execs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1 || echo "?")
  printf '%-14s %12s %8s %s\n' "$target" "$execs" "$((SECONDS - start))" "$findings"
done
[ "$failed" -eq 0 ] || die "crashes found: see fuzz/artifacts/<target>/ and /tmp/fuzz-<target>.log"
