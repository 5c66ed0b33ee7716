#!/usr/bin/env bash
# Installs the amd64 package in fresh Debian 12 (bookworm) and 13 (trixie) minimal roots (no
# compiler, no npm, no node) and runs it there: doctor, the emulator, the daemon started as the
# unit starts it, a face dropped into the enrollment folder reaching done/ and the emulator once,
# say --out writing a WAV, stop (SIGTERM drain), apt remove (state kept), apt purge (all gone).
#
#   sudo packaging/check-amd64.sh [DEB]        (default: the newest dist-pkg/*_amd64.deb)
#   SUITES="trixie" packaging/check-amd64.sh   one suite only
# Base roots are debootstrapped once into $TA_CHECK_CACHE (default /var/cache/terminal-agent-pkg);
# each check installs into a fresh copy, deleted afterwards.
set -euo pipefail
. "$(dirname "$0")/check/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "check-amd64.sh: run as root (chroot, mount)" >&2; exit 77; }
DEB=${1:-$(deb_for amd64)}
trap cleanup_all EXIT
for suite in ${SUITES:-bookworm trixie}; do install_check "$suite" amd64 "$DEB"; done
