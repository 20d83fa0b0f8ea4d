# shellcheck shell=bash
# Measuring for the one-shot publish benchmarks (publisher.sh, confidential.sh), which keep
# their own work directory $work. Source it; do not run it.

# Elapsed seconds, CPU seconds (user + system, all threads and children) and the blocks
# written (getrusage, 512 B each) of a command, in $took, $cpu and $blocks; its stdout goes
# to $1. CPU seconds tell the work apart from waiting for cores other jobs hold.
# shellcheck disable=SC2034,SC2154 # sets took, cpu and blocks; $work is the caller's
timed() {
  local out="$1"; shift
  local start="$EPOCHREALTIME"
  /usr/bin/time -f "%O %U %S" -o "$work/rusage" "$@" | cat >"$out"
  took="$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')"
  read -r blocks user sys < <(tail -n 1 "$work/rusage")
  cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
}

# Files, sizes and modification times of a directory: equal before and after means
# nothing was written there.
snapshot() { find "$@" -printf '%P %s %T@ %i\n' | LC_ALL=C sort | sha256sum | cut -c1-16; }

count() { awk -v s="$2" 'NR > 1 && $5 == s' "$1" | wc -l; }

# median (min-max) of the numbers given, in seconds.
stats() { printf '%s\n' "$@" | LC_ALL=C sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }'; }
median() { printf '%s\n' "$@" | LC_ALL=C sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Target checks: the ratio of two figures, and whether a figure is within its target.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "met" : "MISSED" }'; }
