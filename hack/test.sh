#!/usr/bin/env bash
# Runs every test: formatting and lints (rustfmt, clippy with warnings as errors, rustdoc's
# broken intra-doc links, no import cycle between modules), unit tests, test vectors, the
# by-hand recipe, the end-to-end tests against the real registry, Git server and
# kube-apiservers (which it starts first),
# the quickstart as the end-to-end smoke test, and the benchmark harness in --quick mode so
# it never rots.
#
# Usage: hack/test.sh [extra cargo test args...]
#
# It installs what is missing (Debian packages; the first run builds Kubernetes 1.20 from
# Debian's source package, once, cached under ~/.cache/airlock),
# starts the services that are not running, runs `cargo test --workspace`, and stops the
# services it started. A missing service makes the end-to-end tests fail, never skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$HACK_DIR/.."

# jq and openssl for the by-hand recipe of bundles-format.md section 12, skopeo for interop,
# faketime (libfaketime) for the clock faults of tests/faults, age for the by-hand decryption
# of encrypted bundle files (tests/confidential.rs, bundle/tests/age_cli.rs).
ensure_pkgs jq openssl curl skopeo git faketime age
# SoftHSM2, the PKCS#11 token tests/pkcs11.rs signs with (each test makes a token of its own).
"$HACK_DIR/softhsm.sh" >/dev/null
# helm v3 and v4 for the chart rendering tests and kubectl 1.32 for the kustomize builds,
# which find them under $AIRLOCK_CACHE.
"$HACK_DIR/helm.sh" >/dev/null

started=""
if ! "$HACK_DIR/services.sh" status >/dev/null 2>&1; then
  started=1
fi
"$HACK_DIR/services.sh" start
if [ -n "$started" ] && [ -z "${AIRLOCK_KEEP_SERVICES:-}" ]; then
  trap '"$HACK_DIR/services.sh" stop' EXIT
fi
# shellcheck source=/dev/null
. "$AIRLOCK_STATE/services.env"

export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
log "rustfmt, clippy and rustdoc"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# A module overview naming a module that moved or went fails here, as does any other doc
# warning; private items too, as the overviews link private modules.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --locked
# Layering: the modules of each crate import each other without a cycle.
"$(system_python)" "$HACK_DIR/import-cycles.py" ./*/src
# The contract crate stays free of transport: a third party must be able to vendor it.
if cargo tree --locked -p airlock-bundle -e normal --prefix none | grep -E '^(tokio|reqwest|hyper|git2|kube|oci-client|k8s-openapi|rustls) '; then
  die "airlock-bundle depends on an async runtime, network, Git or Kubernetes crate (above)"
fi
# The fuzz targets live outside the workspace (they need libFuzzer's flags to run), so
# nothing else would notice one that no longer builds. Checked in the workspace's target,
# where clippy has just checked most of their dependencies.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}" cargo check --manifest-path fuzz/Cargo.toml --locked --bins
cargo test --workspace --locked "$@"

log "smoke test: hack/quickstart.sh"
quickstart_dir="$(mktemp -d)"
AIRLOCK_QUICKSTART_DIR="$quickstart_dir" "$HACK_DIR/quickstart.sh" --keep
# A second run on what the first left (its keys, its registration, its reports) must pass too.
log "smoke test: hack/quickstart.sh again"
AIRLOCK_QUICKSTART_DIR="$quickstart_dir" "$HACK_DIR/quickstart.sh" --keep
log "benchmark harness: hack/bench.sh --quick (figures only; targets are not asserted)"
"$HACK_DIR/bench.sh" --quick
