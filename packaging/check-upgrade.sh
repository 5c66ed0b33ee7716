#!/usr/bin/env bash
# Upgrade with uploads in flight: version N installed in a fresh minimal root, the daemon
# uploading faces to an emulator that answers slowly (--latency), `apt-get install` of version
# N+1 over it (the daemon stopped through its SIGTERM drain before the unpack, started after it),
# then every face on the emulator exactly once, done/ complete, config and credentials as the
# operator left them.
#
#   sudo packaging/check-upgrade.sh [DEB_N [DEB_N+1]]   (amd64, trixie; ARCH=arm64 SUITE=... to change)
# Without DEB_N+1, it is built from this checkout with a bumped Debian version (build.sh --version).
# systemd does not run in a chroot, so the stop preinst asks systemd for and the start postinst asks
# for are done here the same way: SIGTERM to the running daemon and wait for its drain, then the new
# one started with the unit's ExecStart (check-systemd.sh has systemd itself do it).
set -euo pipefail
. "$(dirname "$0")/check/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "check-upgrade.sh: run as root (chroot, mount)" >&2; exit 77; }
ARCH=${ARCH:-amd64}; SUITE=${SUITE:-trixie}; FACES=${FACES:-60}; LATENCY=${LATENCY:-1500ms}
[ "$ARCH" = arm64 ] && enable_qemu_arm64
DEB_N=${1:-$(deb_for "$ARCH")}
V_N=$(dpkg-deb -f "$DEB_N" Version)
if [ -n "${2:-}" ]; then DEB_N1=$2; else
  DEB_N1=$("$PKGDIR/build.sh" --arch "$ARCH" --version "$V_N+upgradetest" --out "$PKGDIR/../dist-pkg/upgrade" | tail -n 1)
fi
V_N1=$(dpkg-deb -f "$DEB_N1" Version)
dpkg --compare-versions "$V_N1" gt "$V_N" || { echo "check-upgrade.sh: $V_N1 is not newer than $V_N" >&2; exit 64; }
trap cleanup_all EXIT
t0=$SECONDS
fresh_root "$SUITE" "$ARCH" "upgrade-$SUITE-$ARCH"; root=$ROOT
cp "$DEB_N" "$DEB_N1" "$root/root/check/"
port_for upgrade >"$root/root/check/port"
make_faces "$root" up "$FACES"
echo "check: == upgrade $V_N -> $V_N1 ($SUITE $ARCH) with $FACES faces uploading (emulator latency $LATENCY)"
in_root "$root" install_pkg "/root/check/$(basename "$DEB_N")"
in_root "$root" configure
in_root "$root" start_emulator "$LATENCY"
in_root "$root" run_daemon
in_root "$root" drop_faces up
in_root "$root" wait_some_done up 3
in_root "$root" status
in_root "$root" stop_daemon
in_root "$root" install_pkg "/root/check/$(basename "$DEB_N1")" upgrade
in_root "$root" run_daemon after_upgrade
in_root "$root" status
in_root "$root" wait_done up "$FACES" 900
in_root "$root" exactly_once up "$FACES"
in_root "$root" kept_after_upgrade "$V_N1"
in_root "$root" compile_cache
in_root "$root" stop_daemon
in_root "$root" stop_emulator
sed "s/^/upgrade-$SUITE-$ARCH /" "$root/root/check/results" >>"$CACHE/results.txt"
echo "check-upgrade.sh: passed in $((SECONDS - t0)) s; $(tr '\n' ' ' <"$root/root/check/results")"
