# shellcheck shell=bash
# Measuring and bookkeeping for the benchmark scripts (hack/bench/*.sh). Source
# it; do not run it.
#
# `timed` runs a command once and measures it: wall time, the peak RSS of the largest
# process it ran, its CPU time, and the CPU time the servers named in $BENCH_SERVERS spent
# meanwhile (so a figure shows whether the client or the server did the work). `keep`
# collects those samples per key, `emit` writes them to $RESULTS, which report.py turns
# into the table and BENCHMARKS.md. Nothing here judges a figure against a target: a slow
# run is a figure, never a failure; only a command that fails stops the benchmark.
#
# Environment (hack/bench.sh sets it; the defaults let one script run alone):
#   BENCH_OUT      data, logs and results          (default target/bench)
#   BENCH_RUNS     runs per measurement            (default 5)
#   BENCH_QUICK    1 for the small sizes CI runs
#   BENCH_PROFILE  1 to record a CPU profile (perf, else skipped) of the commands measured
#   BENCH_SERVERS  pid-file names (hack/lib.sh) of the server processes to charge
#   BENCH_BIN_DIR  binaries built elsewhere, run instead of building (hack/lib.sh bench_binaries)

# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

REPO="$(cd "$HACK_DIR/.." && pwd)"
BENCH_OUT="${BENCH_OUT:-$REPO/target/bench}"
BENCH_RUNS="${BENCH_RUNS:-5}"
BENCH_QUICK="${BENCH_QUICK:-}"
BENCH_PROFILE="${BENCH_PROFILE:-}"
BENCH_SERVERS="${BENCH_SERVERS:-}"
BIN_DIR="$(cd "$REPO" && bench_bin_dir)"
# How micro.sh and reports.sh build: optimized as users build, or in quick mode as
# `cargo test --workspace` does (its profile and its feature set), so that after the test
# run only the benchmark targets themselves are compiled.
if [ -n "$BENCH_QUICK" ]; then
  BENCH_CARGO_BUILD=(test --workspace --locked --no-run)
  BENCH_CARGO_RUN=(test --workspace --locked)
else
  BENCH_CARGO_BUILD=(build --profile bench --locked)
  BENCH_CARGO_RUN=(bench --profile bench --locked)
fi
RESULTS="$BENCH_OUT/results.tsv"
LOGS="$BENCH_OUT/logs"
PROFILES="$BENCH_OUT/profiles"
# The generators' seed: the same seed, the same data, the same figures to compare.
export SEED=1
mkdir -p "$LOGS" "$PROFILES"
CLK_TCK="$(getconf CLK_TCK)"
declare -gA SAMPLES=()

# server_ticks — user+system CPU, in clock ticks, of the processes of $BENCH_SERVERS.
server_ticks() {
  local name pid stat total=0
  local -a fields
  for name in $BENCH_SERVERS; do
    pid="$(cat "$(pid_file "$name")" 2>/dev/null)" || continue
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
    # The command name (field 2) may hold spaces; the fields after its ')' do not.
    read -r -a fields <<<"${stat##*) }"
    total=$((total + fields[11] + fields[12]))
  done
  echo "$total"
}

# timed NAME [--ok STATUS]... -- CMD... — runs CMD once, its output in $LOGS/NAME.log, and
# sets WALL (s), RSS (KiB), CPU (s, CMD and its children) and SERVER (s). Any exit status
# but 0 and the --ok ones stops the benchmark with the end of the log.
timed() {
  local name="$1" ok=" 0 " rc=0 t0 t1 s0 s1 rss user sys
  shift
  while [ "$1" = --ok ]; do ok+="$2 "; shift 2; done
  [ "$1" = -- ] && shift
  local out="$LOGS/$name.log" usage="$LOGS/$name.usage"
  s0="$(server_ticks)"
  t0="$(date +%s%N)"
  /usr/bin/time -f '%M %U %S' -o "$usage" "$@" >"$out" 2>&1 || rc=$?
  t1="$(date +%s%N)"
  s1="$(server_ticks)"
  if [[ "$ok" != *" $rc "* ]]; then
    tail -n 25 "$out" >&2
    die "$name: exit status $rc from: $* (log: $out)"
  fi
  # GNU time puts "Command exited with non-zero status N" before the figures.
  read -r rss user sys < <(tail -n 1 "$usage")
  WALL="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')"
  RSS="$rss"
  CPU="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
  SERVER="$(awk -v a="$s0" -v b="$s1" -v t="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / t }')"
}

# keep KEY — adds the last `timed` figures to KEY's samples.
keep() {
  SAMPLES[$1.wall]+="$WALL "
  SAMPLES[$1.rss]+="$RSS "
  SAMPLES[$1.cpu]+="$CPU "
  SAMPLES[$1.server]+="$SERVER "
}

# add KEY VALUE — adds one value to KEY's samples (a byte count, a request count).
add() { SAMPLES[$1]+="$2 "; }

# emit KEY... — writes every sample whose key is KEY or starts with KEY. to $RESULTS.
emit() {
  local prefix key unit
  for prefix in "$@"; do
    for key in $(printf '%s\n' "${!SAMPLES[@]}" | sort); do
      [ "$key" = "$prefix" ] || [[ "$key" == "$prefix".* ]] || continue
      case "$key" in
        *.rss) unit=KiB ;;
        *.wall | *.cpu | *.server) unit=s ;;
        *bytes) unit=bytes ;;
        *) unit=count ;;
      esac
      printf '%s\t%s\t%s\n' "$key" "$unit" "${SAMPLES[$key]% }" >>"$RESULTS"
      unset "SAMPLES[$key]"
    done
  done
}

# fact KEY UNIT VALUE — one figure that is not sampled (a size, a parameter).
fact() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"; }

# note KEY TEXT — text for BENCHMARKS.md: the exact command (KEY ends in .cmd), a breakdown.
# Paths inside the repository are written relative to it.
note() { printf '%s\ttext\t%s\n' "$1" "${2//$REPO\//}" >>"$RESULTS"; }

# profile NAME -- CMD... — with BENCH_PROFILE and a working `perf`, samples CMD's CPU
# (software clock: this machine's perf has no hardware counters) and keeps the hottest
# functions in $PROFILES/NAME.txt. Profiling is evidence for a missed target, not a
# figure: when perf cannot run it says so in the file and the benchmark goes on.
profile() {
  local name="$1"
  shift
  [ "$1" = -- ] && shift
  [ -n "$BENCH_PROFILE" ] || return 0
  local data="$PROFILES/$name.perf" text="$PROFILES/$name.txt"
  if ! command -v perf >/dev/null || ! perf stat -e cpu-clock true >/dev/null 2>&1; then
    echo "perf is not usable here (not installed, or perf_event_paranoid forbids it)" >"$text"
    return 0
  fi
  perf record -q -e cpu-clock -F 2000 -g -o "$data" -- "$@" >"$LOGS/profile-$name.log" 2>&1 || true
  {
    echo "perf record -e cpu-clock -F 2000 -g -- ${*//$REPO\//}"
    # Self time per function; perf pads each line with empty columns, which go.
    perf report -i "$data" --no-children --sort dso,symbol --percent-limit 1.5 --stdio -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | sed -E 's/ +- +- *$//; s/ +$//' | head -n 25
  } >"$text"
  rm -f "$data"
}

# heap_profile NAME -- CMD... — with BENCH_PROFILE and valgrind, runs CMD under massif and
# keeps, in $PROFILES/NAME.txt, the heap at its peak: each large allocation site and the
# first Airlock function above it. Evidence for a memory target, like `profile`.
heap_profile() {
  local name="$1" out text peak
  shift
  [ "$1" = -- ] && shift
  [ -n "$BENCH_PROFILE" ] || return 0
  out="$PROFILES/$name.massif" text="$PROFILES/$name.txt"
  if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed: no heap profile" >"$text"
    return 0
  fi
  valgrind --tool=massif --threshold=2.0 --massif-out-file="$out" "$@" >"$LOGS/heap-$name.log" 2>&1 \
    || { echo "massif failed (log: $LOGS/heap-$name.log)" >"$text"; return 0; }
  peak="$(ms_print "$out" | grep -o '[0-9]* (peak)' | cut -d' ' -f1)"
  {
    echo "valgrind --tool=massif -- ${*//$REPO\//}"
    echo "heap at the peak (snapshot $peak): total, useful, allocator overhead (bytes); then each site"
    ms_print "$out" | awk -v p="$peak" '
      function site(line) { sub(/.*0x[0-9A-F]+: /, "", line); sub(/ \(in .*/, "", line); return line }
      $1 == p && $2 ~ /,/ { on = 1; print $3, $4, $5; next }
      on && /^----------/ { exit }
      on && /^->/ { want = 1; line = substr($0, 3); sub(/ 0x[0-9A-F]+: /, " ", line); sub(/ \(in .*/, "", line); print line; next }
      on && want && site($0) ~ /^airlock/ { print "    called from", site($0); want = 0 }'
  } >"$text"
  rm -f "$out"
}

# bench_keys — a signing key and keyring in $BENCH_OUT/keys (made once); sets KEY, KEYRING.
bench_keys() {
  KEY="$BENCH_OUT/keys/bench.key"
  KEYRING="$BENCH_OUT/keys/keyring.json"
  if [ ! -f "$KEY" ] || [ ! -f "$KEYRING" ]; then
    rm -rf "$BENCH_OUT/keys"
    "$BIN_DIR/airlock-publisher" keygen --out-dir "$BENCH_OUT/keys" --name bench >"$LOGS/keygen.log" 2>&1 \
      || die "keygen failed (log: $LOGS/keygen.log)"
  fi
}

# need_binaries — the binaries hack/bench.sh builds (bench_binaries).
need_binaries() {
  local bin
  for bin in airlock-puller airlock-publisher; do
    [ -x "$BIN_DIR/$bin" ] || die "$BIN_DIR/$bin is missing: run hack/bench.sh, which builds it"
  done
}

# need_services — the service addresses from hack/services.sh.
need_services() {
  [ -f "$AIRLOCK_STATE/services.env" ] || die "services are not running: hack/services.sh start"
  # shellcheck source=/dev/null
  . "$AIRLOCK_STATE/services.env"
}
