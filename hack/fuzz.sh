#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed number of executions and prints one line per
# target (executions, seconds, findings). Crashes land in fuzz/artifacts/<target>/; turn
# each into a regression test before fixing it.
#
# Usage: hack/fuzz.sh [RUNS [TARGET...]]   (default 200000 executions, every target)
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
for target in $targets; do
  start=$SECONDS
  mkdir -p "corpus/$target"
  extra=()
  [ -d "seeds/$target" ] && extra+=("seeds/$target")
  options=(-runs="$runs" -max_len=65536)
  [ -f "dict/$target.dict" ] && options+=(-dict="dict/$target.dict")
  if cargo fuzz run "$target" "corpus/$target" "${extra[@]}" -- "${options[@]}" >"/tmp/fuzz-$target.log" 2>&1; then
    findings=0
  elif grep -q '^error: could not compile' "/tmp/fuzz-$target.log"; then
    die "$target does not build; see /tmp/fuzz-$target.log"
  else
    findings=$(find "artifacts/$target" -type f 2>/dev/null | wc -l || true)
  fi
  execs=$(grep -Eo 'Done [0-9]+ runs' "/tmp/fuzz-$target.log" | grep -Eo '[0-9]+' || echo "?")
  printf '%-14s %12s %8s %s\n' "$target" "$execs" "$((SECONDS - start))" "$findings"
done
