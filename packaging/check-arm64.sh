#!/usr/bin/env bash
# Proof on arm64: a fresh Debian 13 (trixie) arm64 minimal root run through qemu user-mode
# emulation (qemu-user-static + binfmt-support), the arm64 package installed there with apt,
# then doctor, the emulator, the daemon (started as the unit starts it), a face dropped into the
# enrollment folder reaching done/ (and the emulator, once), say --out writing a WAV, the SIGTERM
# drain, apt remove (state kept) and apt purge (all gone).
#
#   sudo packaging/check-arm64.sh [DEB]        (default: the newest dist-pkg/*_arm64.deb)
#   SUITE=bookworm packaging/check-arm64.sh    Debian 12 instead (the base of Raspberry Pi OS)
# Slow: everything arm64 runs emulated (docs/packaging.md). The base root is debootstrapped
# once into $TA_CHECK_CACHE (default /var/cache/terminal-agent-pkg); each run uses a fresh copy.
set -euo pipefail
. "$(dirname "$0")/check/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "check-arm64.sh: run as root (chroot, mount, binfmt)" >&2; exit 77; }
DEB=${1:-$(deb_for arm64)}
enable_qemu_arm64
trap cleanup_all EXIT
t0=$SECONDS
install_check "${SUITE:-trixie}" arm64 "$DEB"
echo "check-arm64.sh: passed in $((SECONDS - t0)) s (emulated)"
