#!/usr/bin/env bash
# The real Sveltos CRDs (ClusterProfile, Profile, SveltosCluster), made acceptable to the
# Kubernetes 1.20 apiservers of hack/services.sh, which refuse two things those CRDs use:
#   - `x-kubernetes-validations` (CEL rules, Kubernetes 1.25+): the blocks are dropped, so
#     the few cross-field rules they state (exactly one of kind and remoteURL, pullMode is
#     immutable, ...) are not enforced;
#   - `default: ""` on a string (SveltosCluster's workloadIdentity.caSecretRef.name), which
#     1.20 reads as a null default: the line is dropped.
# Nothing else changes. The CRDs are read from $SVELTOS_CRDS (default ../shared/sveltos-crds
# beside the repository) and never copied into it; hack/crds/ keeps Airlock's own, smaller
# CRDs of the same names.
#
# `status` does the same for the CRDs of beyond-profiles/ that `airlock-publisher ingest`
# writes (ClusterConfiguration, ClusterReport, ClassifierReport, EventReport,
# HealthCheckReport) or reads (ConfigurationGroup, which Sveltos's controllers stage for
# their pull-mode clusters; Classifier, EventSource, EventTrigger, HealthCheck and
# ClusterHealthCheck, which the publisher reads too), and marks every string property
# `nullable: true`: 1.20 reads an empty string in a custom resource as null and refuses it
# where the property is not nullable, and Sveltos writes "" for the core group and for the
# namespace of a cluster-scoped object.
#
# Usage: hack/sveltos-crds.sh print              # the stripped CRDs on stdout, one stream
#        hack/sveltos-crds.sh install KUBECONFIG # server-side apply, then wait Established
#        hack/sveltos-crds.sh status KUBECONFIG  # the same for ClusterConfiguration, ClusterReport,
#                                                # ConfigurationGroup, Classifier, ClassifierReport,
#                                                # EventSource, EventTrigger, EventReport,
#                                                # HealthCheck, ClusterHealthCheck, HealthCheckReport
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crds="${SVELTOS_CRDS:-$repo/../shared/sveltos-crds}"

strip() {
  # A validations block is its key line plus every following line indented deeper, or at
  # the key's indentation and starting a list item (controller-gen writes `- rule:` there).
  awk '
    skip {
      match($0, /^ */)
      if (RLENGTH > indent || (RLENGTH == indent && substr($0, indent + 1, 2) == "- ")) next
      skip = 0
    }
    /^ *x-kubernetes-validations:/ { match($0, /^ */); indent = RLENGTH; skip = 1; next }
    /^ *default: ""$/ { next }
    { print }
  ' "$1"
}

print_all() {
  local files=("$crds"/*.yaml) first=1
  [ -e "${files[0]}" ] || { echo "no CRDs in $crds (set SVELTOS_CRDS)" >&2; exit 1; }
  for f in "${files[@]}"; do
    [ "$first" = 1 ] || echo "---"
    first=0
    strip "$f"
  done
}

print_status() {
  local f first=1
  for f in "$crds"/beyond-profiles/{config.projectsveltos.io_clusterconfigurations,config.projectsveltos.io_clusterreports,lib.projectsveltos.io_configurationgroups,lib.projectsveltos.io_classifiers,lib.projectsveltos.io_classifierreports,lib.projectsveltos.io_eventsources,lib.projectsveltos.io_eventtriggers,lib.projectsveltos.io_eventreports,lib.projectsveltos.io_healthchecks,lib.projectsveltos.io_clusterhealthchecks,lib.projectsveltos.io_healthcheckreports}.yaml; do
    [ -e "$f" ] || { echo "no $f (set SVELTOS_CRDS)" >&2; exit 1; }
    [ "$first" = 1 ] || echo "---"
    first=0
    strip "$f" | awk '{ print } /^ *type: string$/ { match($0, /^ */); printf "%*snullable: true\n", RLENGTH, "" }'
  done
}

out=""
install() {
  local kubeconfig="$1" print="$2" kubectl="${AIRLOCK_KUBECTL:-kubectl}"
  out="$(mktemp)"
  trap 'rm -f "$out"' EXIT
  "$print" >"$out"
  "$kubectl" --kubeconfig "$kubeconfig" apply --server-side -f "$out" >&2
  "$kubectl" --kubeconfig "$kubeconfig" wait --for condition=established --timeout=60s -f "$out" >&2
}

case "${1:-}" in
  print) print_all ;;
  install) install "${2:?usage: $0 install KUBECONFIG}" print_all ;;
  status) install "${2:?usage: $0 status KUBECONFIG}" print_status ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
