#!/usr/bin/env bash
# The benchmark suite: each Airlock tool against what an operator would script instead,
# in the same run, on the same data and the same real services.
#
# Usage: hack/bench.sh [--quick]
#   (full)    1,000 and 5,000 objects, 1,000 clusters, a 10 MB bundle; 5 runs of each
#             measurement, CPU profiles; the long run. Writes BENCHMARKS.md.
#   --quick   tiny sizes, 1 run, no profiles, the dev build the tests made: the harness
#             check CI runs so it never rots (its figures are not benchmarks); writes
#             target/bench/BENCHMARKS.md.
#
# It builds the release binaries, starts the services (hack/services.sh), generates its
# data with a fixed seed, runs hack/bench/{puller,mirror,verify,publisher,confidential}.sh
# (the publisher's rows and the confidential bundles' in sections of their own), the
# criterion micro-benchmarks (hack/bench/micro.sh) and the reports' ingest
# (hack/bench/reports.sh), prints one table and writes the document. It fails only when a
# command fails: figures are reported, targets are judged in the document and never make
# the run fail. Data, logs and profiles stay in target/bench/.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/.."

quick=""
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument $1 (see --help)" ;;
esac

export BENCH_OUT="$PWD/target/bench" BENCH_QUICK="$quick"
if [ -n "$quick" ]; then
  export BENCH_RUNS=1 BENCH_PROFILE=""
  document="$BENCH_OUT/BENCHMARKS.md"
else
  export BENCH_RUNS=5 BENCH_PROFILE=1
  document="$PWD/BENCHMARKS.md"
fi
started=$SECONDS

ensure_pkgs time jq skopeo python3 gzip coreutils age openssl
python="$(system_python)"
bench_binaries >/dev/null
"$HACK_DIR/services.sh" start >&2
# shellcheck source=/dev/null
. "$AIRLOCK_STATE/services.env"
t0=$SECONDS

# This run's files only: publisher.sh and confidential.sh keep their own under
# target/bench/ too.
rm -rf "$BENCH_OUT"/{results.tsv,logs,profiles,puller,mirror,verify,reports,criterion,machine.txt,load.txt}
mkdir -p "$BENCH_OUT"

# The machine is shared: sample its load while the benchmark runs, to say so if it was busy.
(
  while sleep 10; do
    printf '%s %s\n' "$(cut -d' ' -f1 /proc/loadavg)" "$(pgrep -c -x rustc || true)"
  done
) >"$BENCH_OUT/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

{
  echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit:      $(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' with uncommitted changes')"
  echo "cores:       $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
  echo "kernel:      $(uname -sr)"
  echo "kubernetes:  $("$AIRLOCK_KUBECTL" --kubeconfig "$AIRLOCK_KUBECONFIG_MANAGED" version -o json | jq -r .serverVersion.gitVersion) (kube-apiserver, etcd, kube-controller-manager on this machine)"
  echo "registry:    Distribution $(dpkg-query -W -f='${Version}' docker-registry 2>/dev/null || echo '?') (plain HTTP, this machine)"
  echo "skopeo:      $(skopeo --version | cut -d' ' -f3)"
  echo "load at start (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg); rustc processes: $(pgrep -c -x rustc || true)"
  echo "free -g:"
  free -g
} >"$BENCH_OUT/machine.txt"

"$HACK_DIR/bench/puller.sh"
"$HACK_DIR/bench/mirror.sh"
"$HACK_DIR/bench/verify.sh"
"$HACK_DIR/bench/publisher.sh" ${quick:+--quick}
"$HACK_DIR/bench/confidential.sh" ${quick:+--quick}
"$HACK_DIR/bench/micro.sh"
# After micro.sh: its generator is built with the profile and features micro.sh builds.
"$HACK_DIR/bench/reports.sh"
"$HACK_DIR/bench/helm.sh"

kill "$sampler" 2>/dev/null || true
awk '{ n++; s += $1; if ($1 > m) m = $1; if ($2 > 0) busy++ }
     END { if (n) printf "load during the run (1-min average, every 10 s): mean %.1f, max %.1f; samples with rustc running (other engineers compiling): %d of %d\n", s / n, m, busy, n }' \
  "$BENCH_OUT/load.txt" >>"$BENCH_OUT/machine.txt"
echo "benchmark wall time: $((SECONDS - t0)) s (runs per measurement: $BENCH_RUNS)" >>"$BENCH_OUT/machine.txt"

"$python" "$HACK_DIR/bench/report.py" --results "$BENCH_OUT/results.tsv" --out "$document" \
  --machine "$BENCH_OUT/machine.txt" --profiles "$BENCH_OUT/profiles" \
  --publisher "$BENCH_OUT/publisher.md" --confidential "$BENCH_OUT/confidential.md" --criterion "$BENCH_OUT/criterion" ${quick:+--quick}
log "wrote ${document#"$PWD"/}; $((SECONDS - started)) s in all, build and services included"
