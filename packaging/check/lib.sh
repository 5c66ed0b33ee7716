# Shared by packaging/check-*.sh (sourced): cached debootstrapped base roots, a fresh copy of one
# for each check, and cleanup of what the check started and mounted there.
CACHE=${TA_CHECK_CACHE:-/var/cache/terminal-agent-pkg}
MIRROR=$(sed -n 's/^URIs: \(.*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PKGDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOTS=()

need() { # command package
  command -v "$1" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

enable_qemu_arm64() {
  need update-binfmts binfmt-support
  [ -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ] || [ -x /usr/bin/qemu-aarch64-static ] || need qemu-aarch64-static qemu-user-static
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64 2>/dev/null || true
  grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 || { echo "check: qemu-aarch64 binfmt not enabled" >&2; exit 1; }
}

base_root() { # suite arch -> path of the cached minimal root (made once; never modified)
  local base="$CACHE/base-$1-$2"
  if [ ! -x "$base/usr/bin/apt-get" ]; then
    need debootstrap debootstrap
    mkdir -p "$CACHE"; rm -rf "$base.tmp"
    echo "check: debootstrap --arch=$2 --variant=minbase $1 (once; cached in $base)" >&2
    debootstrap --arch="$2" --variant=minbase --include=ca-certificates "$1" "$base.tmp" "$MIRROR" >"$CACHE/debootstrap-$1-$2.log" 2>&1 \
      || { tail -n 20 "$CACHE/debootstrap-$1-$2.log" >&2; exit 1; }
    mv "$base.tmp" "$base"
  fi
  echo "$base"
}

fresh_root() { # suite arch name: ROOT= a new copy of the base root, /proc and /dev mounted
  local base; base=$(base_root "$1" "$2"); ROOT="$CACHE/run-$3"
  local root=$ROOT
  cleanup_root "$root"
  cp -a "$base" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  mount --bind /dev "$root/dev"
  mkdir -p "$root/root/check"
  cp "$PKGDIR/check/inside.sh" "$PKGDIR/../test/bench/lib/tls-front.mjs" "$root/root/check/"
  ROOTS+=("$root")
}

cleanup_root() { # root: stop what runs in it (started by this check), unmount, delete
  local root=$1 p
  [ -d "$root" ] || return 0
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -TERM "${p#/proc/}" 2>/dev/null || true
  done
  sleep 1
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null || true
  done
  for m in dev proc; do mountpoint -q "$root/$m" && umount "$root/$m"; done
  if mountpoint -q "$root/dev" || mountpoint -q "$root/proc"; then echo "check: $root still has mounts; not deleted" >&2; return 1; fi
  rm -rf "$root"
}

cleanup_all() { local r; for r in "${ROOTS[@]}"; do cleanup_root "$r" || true; done; }

port_for() { # name -> a port of its own for the emulator of that check
  case "$1" in trixie-arm64) echo 8791 ;; bookworm-amd64) echo 8792 ;; trixie-amd64) echo 8793 ;; *) echo 8794 ;; esac
}

make_faces() { # root prefix count
  node "$PKGDIR/check/make-faces.mjs" "$3" "$1/root/check/faces" "$2"
}

in_root() { # root step args...
  local root=$1; shift
  chroot "$root" /root/check/inside.sh "$@"
}

deb_for() { # arch [version] -> the newest dist-pkg/terminal-agent_*_arch.deb, or the version's
  local d="$PKGDIR/../dist-pkg" f
  if [ -n "${2:-}" ]; then f="$d/terminal-agent_$2_$1.deb"; else f=$(ls -t "$d"/terminal-agent_*_"$1".deb 2>/dev/null | head -n 1); fi
  [ -f "$f" ] || { echo "check: no package for $1 in $d: run npm run package first" >&2; exit 1; }
  echo "$f"
}

# The whole first-install scenario on one fresh root.
install_check() { # suite arch deb
  local suite=$1 arch=$2 deb=$3 root t0=$SECONDS
  fresh_root "$suite" "$arch" "$suite-$arch"; root=$ROOT
  cp "$deb" "$root/root/check/"
  echo "$(port_for "$suite-$arch")" >"$root/root/check/port"
  make_faces "$root" face 5
  echo "check: == $suite $arch: $(basename "$deb") in a fresh minbase root"
  in_root "$root" install_pkg "/root/check/$(basename "$deb")"
  in_root "$root" configure
  in_root "$root" compile_cache
  in_root "$root" start_emulator
  in_root "$root" doctor
  in_root "$root" face_check
  in_root "$root" run_daemon
  in_root "$root" drop_faces face
  in_root "$root" wait_done face 5
  in_root "$root" exactly_once face 5
  in_root "$root" say_wav
  in_root "$root" system_ca
  in_root "$root" stop_daemon
  in_root "$root" stop_emulator
  in_root "$root" remove_pkg
  in_root "$root" purge_pkg
  echo "check: == $suite $arch passed in $((SECONDS - t0)) s; $(tr '\n' ' ' <"$root/root/check/results")"
  cat "$root/root/check/results" | sed "s/^/$suite-$arch /" >>"$CACHE/results.txt"
  cleanup_root "$root"
}
