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
# Usage: hack/sveltos-crds.sh print              # the stripped CRDs on stdout, one stream
#        hack/sveltos-crds.sh install KUBECONFIG # server-side apply, then wait Established
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

case "${1:-}" in
  print) print_all ;;
  install)
    kubeconfig="${2:?usage: $0 install KUBECONFIG}"
    kubectl="${AIRLOCK_KUBECTL:-kubectl}"
    out="$(mktemp)"
    trap 'rm -f "$out"' EXIT
    print_all >"$out"
    "$kubectl" --kubeconfig "$kubeconfig" apply --server-side -f "$out" >&2
    "$kubectl" --kubeconfig "$kubeconfig" wait --for condition=established --timeout=60s -f "$out" >&2
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
