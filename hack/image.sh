#!/usr/bin/env bash
# Builds the puller and publisher into an OCI image with Debian tools only: the release
# binaries plus the few shared libraries they link, a non-root user, nothing else. umoci
# assembles the image from a root filesystem; skopeo pushes it to the local registry.
#
# Usage: hack/image.sh [--debug] [--push REGISTRY | --push-to REF]     (e.g. --push 127.0.0.1:5000)
#   --debug  the debug binaries of target/debug instead of a release build: what the
#            quickstart and the end-to-end tests run, which build those anyway
#   --push REGISTRY  pushes REGISTRY/airlock/puller:<version>
#   --push-to REF    pushes to REF itself (tests push a tag of their own)
#   Prints the image reference (for `register cluster --image`) on stdout, pinned to the
#   pushed manifest's digest when pushed (REF@sha256:...).
#   The image layout stays in target/image (oci:target/image:<version>).
#
# The image runs as UID 65532 with no shell, and writes nowhere but the volumes the
# registration YAML mounts (/tmp, /var/lib/airlock), so a read-only root filesystem works.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/.."

push="" profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --push) push="$2/airlock/puller:"; shift 2 ;;
    --push-to) push="$2"; shift 2 ;;
    --debug) profile=debug; shift ;;
    *) die "unknown argument $1 (usage: $0 [--debug] [--push REGISTRY | --push-to REF])" ;;
  esac
done

ensure_pkgs umoci skopeo ca-certificates
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
bin_dir="${CARGO_TARGET_DIR:-target}/$profile"
log "building $profile binaries"
if [ "$profile" = release ]; then
  cargo build --release --locked -p airlock-puller -p airlock-publisher >&2
else
  # The whole workspace's binaries, so their dependencies are built with the features
  # `cargo test --workspace` built them with, and reused: `-p` would build them again.
  cargo build --locked --workspace --bins >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layout=target/image
rm -rf "$layout"
umoci init --layout "$layout" >&2
umoci new --image "$layout:$version" >&2
umoci unpack --rootless --image "$layout:$version" "$work/bundle" >&2
root="$work/bundle/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/var/lib/airlock"
for bin in airlock-puller airlock-publisher; do
  install -m 0755 "$bin_dir/$bin" "$root/usr/local/bin/$bin"
  # The shared libraries the binary links (glibc and friends) and the loader.
  ldd "$bin_dir/$bin" | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nairlock:x:65532:65532:airlock:/var/lib/airlock:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nairlock:x:65532:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
umoci repack --image "$layout:$version" "$work/bundle" >&2
umoci config --image "$layout:$version" \
  --config.user 65532:65532 \
  --config.entrypoint /usr/local/bin/airlock-puller \
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.workingdir /var/lib/airlock \
  --config.label org.opencontainers.image.title=airlock \
  --config.label "org.opencontainers.image.version=$version" >&2
umoci gc --layout "$layout" >&2
size=$(du -sh "$layout" | cut -f1)
log "image oci:$layout:$version ($size)"

if [ -n "$push" ]; then
  ref="$push"
  case "$ref" in *:) ref="$ref$version" ;; esac
  skopeo copy --quiet --dest-tls-verify=false --digestfile "$work/digest" "oci:$layout:$version" "docker://$ref" >&2
  # Pinned to the digest: a node that pulled an earlier build under the same tag runs this
  # one, not the image it has cached (a tag other than latest is pulled only if absent).
  ref="$ref@$(cat "$work/digest")"
  log "pushed $ref"
  echo "$ref"
else
  echo "oci:$layout:$version"
fi
