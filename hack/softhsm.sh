#!/usr/bin/env bash
# Installs SoftHSM2, the PKCS#11 token the end-to-end tests sign with (tests/pkcs11.rs),
# and prints the path of its module. Safe to run any number of times.
#
# Usage: hack/softhsm.sh
#
# Tokens are never made here: each test points SOFTHSM2_CONF at a configuration and a
# token directory of its own, so no test reads or writes /var/lib/softhsm.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_pkgs softhsm2
module=/usr/lib/softhsm/libsofthsm2.so
[ -f "$module" ] || die "softhsm2 is installed but $module is missing"
echo "$module"
