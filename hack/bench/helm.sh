#!/usr/bin/env bash
# Row 12: Helm rendering at fleet scale. `publish` of N SveltosClusters (1,000; 10 with
# BENCH_QUICK) x 3 charts of ../shared/charts (kube-state-metrics, ingress-nginx,
# cert-manager), served over HTTP on 127.0.0.1, whose values name one of 10 cluster groups:
# 30 distinct (chart, values) pairs. Counted: the `helm template` runs of a cold publish
# (empty cache) and of a re-publish with nothing changed (target: none), through a shim that
# logs each helm invocation. Peer: the same 30 renders as `helm template` runs done directly,
# as many at once as there are cores (the publisher renders on every core too).
#
# Usage: hack/bench/helm.sh   (hack/bench.sh runs it; it needs the release binaries)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"
need_binaries
bench_keys

CLUSTERS=1000
[ -n "$BENCH_QUICK" ] && CLUSTERS=10
GROUPS_=10
CHARTS="${AIRLOCK_CHARTS:-$REPO/../shared/charts}"
[ -f "$CHARTS/index.yaml" ] || die "no test charts at $CHARTS (set AIRLOCK_CHARTS to shared/charts)"
HELM="$("$HACK_DIR/helm.sh" v3)"
DATA="$BENCH_OUT/helm"
rm -rf "$DATA"
mkdir -p "$DATA/fleet" "$DATA/values"
python="$(system_python)"

port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$python" -m http.server --bind 127.0.0.1 "$port" --directory "$CHARTS" >"$LOGS/helm-charts-server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
wait_for_port "$port" 20 || die "the chart server did not start (log: $LOGS/helm-charts-server.log)"
REPOSITORY="http://127.0.0.1:$port"

# The fleet: cluster i in group g(i % 10), each reporting Kubernetes v1.20.2.
for i in $(seq 0 $((CLUSTERS - 1))); do
  printf 'apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {name: c%05d, namespace: fleet, labels: {group: g%d}}\nspec: {pullMode: true}\nstatus: {version: v1.20.2}\n---\n' "$i" $((i % GROUPS_))
done >"$DATA/fleet/clusters.yaml"
# chart version release namespace values-root: each chart's values put the group in a pod
# annotation, so the 10 groups render 10 different releases of each chart.
CHART_LIST=(
  "kube-state-metrics 4.0.2 ksm ksm podAnnotations"
  "ingress-nginx 4.0.13 ingress ingress-nginx controller.podAnnotations"
  "cert-manager v1.7.3 cert-manager cert-manager podAnnotations"
)
printf '%s\n' "${CHART_LIST[@]}" | "$python" -c '
import json, sys
repository = sys.argv[1]
print("apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {name: charts}")
print("spec:\n  clusterSelector: {matchExpressions: [{key: group, operator: Exists}]}\n  helmCharts:")
for line in sys.stdin:
    chart, version, release, namespace, root = line.split()
    values = {"group": "{{ .Cluster.metadata.labels.group }}"}
    for key in reversed(root.split(".")):
        values = {key: values}
    entry = {"repositoryURL": repository, "repositoryName": "airlock-test", "chartName": f"airlock-test/{chart}",
             "chartVersion": version, "releaseName": release, "releaseNamespace": namespace, "values": json.dumps(values)}
    print("  - " + json.dumps(entry))
' "$REPOSITORY" >"$DATA/fleet/profile.yaml"
# The same renders, for the direct runs: one values file per chart and group.
for entry in "${CHART_LIST[@]}"; do
  read -r chart version release namespace root <<<"$entry"
  for g in $(seq 0 $((GROUPS_ - 1))); do
    file="$DATA/values/$chart-g$g.json"
    "$python" -c 'import json, sys; keys = sys.argv[1].split("."); v = {"group": sys.argv[2]}
for k in reversed(keys): v = {k: v}
print(json.dumps(v))' "$root" "g$g" >"$file"
    echo "$release $CHARTS/$chart-$version.tgz $namespace $file"
  done
done >"$DATA/renders.txt"
PAIRS="$(wc -l <"$DATA/renders.txt")"

# calls LOG VERB — the helm processes of VERB a publish started: each is a debug event of
# the publisher's helm module, the only one that filter lets through. (A counting shim in
# front of helm cannot run: helm runs confined to its own files.)
calls() { grep -c "helm runs verb=$2\$" "$1" || true; }
outcome() { awk -v s="$2" 'NR > 1 && $5 == s' "$1" | wc -l; }
PUBLISH=("$BIN_DIR/airlock-publisher" --log "warn,airlock_publisher::render::helm::binary=debug" publish --from-dir "$DATA/fleet" --key "$KEY" --helm "$HELM")

direct() {
  xargs -P "$(nproc)" -L 1 sh -c '"$0" template "$1" "$2" --namespace "$3" --values "$4" --include-crds --kube-version v1.20.2 >/dev/null' "$HELM" <"$DATA/renders.txt"
}
export -f direct
export HELM DATA

log "row 12: publish $CLUSTERS clusters x ${#CHART_LIST[@]} charts, $PAIRS distinct renders, vs $PAIRS direct helm template runs ($BENCH_RUNS runs each)"
# Each run publishes into a layout and cache of its own, all removed after the last run:
# creating a layout's files right after deleting the previous run's makes ext4 skip the
# inodes it just freed one by one, kernel time that grew with every run.
for run in $(seq "$BENCH_RUNS"); do
  LAYOUT="$DATA/runs/$run/layout" CACHE="$DATA/runs/$run/cache"
  timed "helm-cold-$run" -- "${PUBLISH[@]}" --to "oci-layout:$LAYOUT" --cache-dir "$CACHE"
  [ "$(outcome "$LOGS/helm-cold-$run.log" published)" -eq "$CLUSTERS" ] || die "run $run: not every cluster published (log: $LOGS/helm-cold-$run.log)"
  keep helm.cold
  add helm.cold.templates "$(calls "$LOGS/helm-cold-$run.log" template)"
  add helm.cold.pulls "$(calls "$LOGS/helm-cold-$run.log" pull)"
  timed "helm-again-$run" -- "${PUBLISH[@]}" --to "oci-layout:$LAYOUT" --cache-dir "$CACHE"
  [ "$(outcome "$LOGS/helm-again-$run.log" unchanged)" -eq "$CLUSTERS" ] || die "run $run: the re-publish changed clusters (log: $LOGS/helm-again-$run.log)"
  keep helm.again
  add helm.again.templates "$(calls "$LOGS/helm-again-$run.log" template)"
  add helm.again.pulls "$(calls "$LOGS/helm-again-$run.log" pull)"
  timed "helm-direct-$run" -- bash -c direct
  keep helm.direct
done
rm -rf "$DATA/runs"
fact helm.clusters count "$CLUSTERS"
fact helm.pairs count "$PAIRS"
fact helm.cores count "$(nproc)"
note helm.cold.cmd "${PUBLISH[*]} --to oci-layout:LAYOUT --cache-dir CACHE (empty LAYOUT and CACHE)"
note helm.again.cmd "the same, right after"
note helm.direct.cmd "xargs -P $(nproc) -L 1 over $PAIRS lines of: helm template RELEASE CHART.tgz --namespace NS --values GROUP.json --include-crds --kube-version v1.20.2"
emit helm.cold helm.again helm.direct
log "done: row 12 in $RESULTS"
