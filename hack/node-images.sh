#!/usr/bin/env bash
# The images hack/node.sh loads into its containerd, made with Debian tools only (no image
# is ever pulled from the internet):
#   pause    the sandbox image, built from the Kubernetes tree's build/pause/linux/pause.c
#            with `gcc -static`, as upstream builds it; runs as 65535 like upstream's
#   busybox  Debian's busybox-static with a link per applet, for tests
# Each is an OCI layout of one tag in $AIRLOCK_CACHE/node-images/<name>, assembled with
# umoci and built only when missing.
#
# Usage: hack/node-images.sh [build|tags]
#   build  build the missing layouts (the Kubernetes tree must be unpacked: hack/kube.sh build)
#   tags   print "<name> <layout dir> <tag>" per image
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=kube-lib.sh
. "$HACK_DIR/kube-lib.sh"

IMAGES_DIR="$AIRLOCK_CACHE/node-images"
# The tag of the pause source in Kubernetes 1.20's build/pause/Makefile.
PAUSE_TAG=3.4

busybox_tag() {
  ensure_pkgs busybox-static
  # 1:1.35.0-4+deb12u1 -> 1.35.0
  dpkg-query -W -f='${Version}' busybox-static | sed -E 's/^[0-9]+://; s/-[^-]*$//'
}

tags() {
  echo "pause $IMAGES_DIR/pause $PAUSE_TAG"
  echo "busybox $IMAGES_DIR/busybox $(busybox_tag)"
}

# assemble NAME TAG CONFIG_ARGS... — stdin is a shell snippet run with $root set to the
# image's root filesystem; the result becomes the layout's only tag.
assemble() {
  local name="$1" tag="$2" layout="$IMAGES_DIR/$1" work
  shift 2
  # umoci names the tag in index.json; a layout is only renamed into place when complete.
  grep -qF "\"org.opencontainers.image.ref.name\":\"$tag\"" "$layout/index.json" 2>/dev/null && return 0
  work="$(mktemp -d)"
  rm -rf "$layout" "$layout.tmp"
  mkdir -p "$IMAGES_DIR"
  umoci init --layout "$layout.tmp" >&2
  umoci new --image "$layout.tmp:$tag" >&2
  umoci unpack --rootless --image "$layout.tmp:$tag" "$work/bundle" >&2
  root="$work/bundle/rootfs" bash -euo pipefail
  umoci repack --image "$layout.tmp:$tag" "$work/bundle" >&2
  umoci config --image "$layout.tmp:$tag" "$@" >&2
  umoci gc --layout "$layout.tmp" >&2
  rm -rf "$work"
  mv "$layout.tmp" "$layout"
  log "image $name:$tag in $layout"
}

build() {
  ensure_pkgs umoci gcc libc6-dev busybox-static
  [ -f "$K8S_TREE/build/pause/linux/pause.c" ] || die "no Kubernetes tree at $K8S_TREE; run hack/kube.sh build"
  # Read by the snippet below, which runs in a shell of its own.
  export PAUSE_C="$K8S_TREE/build/pause/linux/pause.c" PAUSE_TAG
  assemble pause "$PAUSE_TAG" \
    --config.user 65535:65535 --config.entrypoint /pause <<'SH'
gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_TAG-airlock" -o "$root/pause" "$PAUSE_C"
strip "$root/pause"
SH
  assemble busybox "$(busybox_tag)" --config.cmd sh --config.env PATH=/bin <<'SH'
mkdir -p "$root/bin" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
SH
}

case "${1:-build}" in
  build) build ;;
  tags) tags ;;
  *) echo "usage: $0 [build|tags]" >&2; exit 2 ;;
esac
