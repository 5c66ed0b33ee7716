#!/usr/bin/env bash
# The enrollment folders as a security boundary (issue 71), with the long race: the operator tests
# of test/daemon/enroll-operator.test.ts with 60 s of symbolic-link flips (the default suite runs
# 10 s), against this checkout's dist/ (run `npm run build` first), or with --deb against a package.
#
#   packaging/check-operator.sh [SECONDS]              (as root; about 90 s with the default 60)
#   packaging/check-operator.sh --deb DEB [SECONDS]    the same cases against the package's program
#
# The daemon runs as nobody with a test group, the operator as another member of that group
# (setpriv); nothing outside enroll.dir may be read, sent, moved or written.
#
# --deb: the package is unpacked (dpkg-deb -x, into a folder under /tmp deleted afterwards) and the
# daemon under test is its own files: its bin/node (Node 24), its dist/ and its node_modules with
# the native addons built for that node, started with the node flags of the package's unit
# (ExecStart= and NODE_OPTIONS). This checkout's dist/ is not used; the test itself, the emulator
# and the operator's moves come from the checkout. The test checks that the daemon's process is
# that node and that every native addon it loaded comes from the unpacked tree. Not covered here
# (packaging/check-amd64.sh does it): the maintainer scripts; the test makes the folders with the
# owner and modes postinst gives them. The package must be for this machine's architecture.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-operator.sh: run as root (the test switches users)" >&2; exit 77; }
DEB=""
if [ "${1:-}" = --deb ]; then
  DEB=${2:?check-operator.sh: --deb needs the path of a .deb}
  shift 2
fi
RACE_S=${1:-60}
cd "$SRC"

if [ -z "$DEB" ]; then
  [ -f "$SRC/dist/main.js" ] || { echo "check-operator.sh: $SRC/dist/main.js is missing: run npm run build" >&2; exit 1; }
  TA_OPERATOR_RACE_S=$RACE_S exec npx vitest run --config test/vitest.config.ts test/daemon/enroll-operator.test.ts
fi

[ -f "$DEB" ] || { echo "check-operator.sh: $DEB: no such file" >&2; exit 1; }
arch=$(dpkg-deb -f "$DEB" Architecture)
[ "$arch" = "$(dpkg --print-architecture)" ] || { echo "check-operator.sh: $DEB is for $arch, this machine is $(dpkg --print-architecture)" >&2; exit 1; }
UNPACKED=$(mktemp -d /tmp/ta-operator-deb.XXXXXX)
trap 'rm -rf "$UNPACKED"' EXIT
chmod 0755 "$UNPACKED" # nobody runs the daemon from it
dpkg-deb -x "$DEB" "$UNPACKED"
PREFIX=/usr/lib/terminal-agent
UNIT="$UNPACKED/usr/lib/systemd/system/terminal-agent.service"
# ExecStart= is node, node's flags, then the program (packaging/unit.sh); NODE_OPTIONS' flags are
# node flags too, given here on the command line.
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
flags=()
for w in ${exec_start#* }; do case $w in -*) flags+=("$w") ;; *) break ;; esac; done
# shellcheck disable=SC2207 # the unit's NODE_OPTIONS is split on spaces, as node splits it
flags+=($(sed -n 's/^Environment="\{0,1\}NODE_OPTIONS=\([^"]*\)"\{0,1\}$/\1/p' "$UNIT"))
node="$UNPACKED$PREFIX/bin/node"
entry="$UNPACKED$PREFIX/dist/main.js"
[ "${exec_start%% *}" = "$PREFIX/bin/node" ] && [ -x "$node" ] && [ -f "$entry" ] \
  || { echo "check-operator.sh: $DEB has no $PREFIX/bin/node, $PREFIX/dist/main.js and a unit starting them" >&2; exit 1; }
echo "check-operator.sh: $(basename "$DEB") ($(dpkg-deb -f "$DEB" Version)) unpacked in $UNPACKED: $("$node" --version) ${flags[*]} dist/main.js, a ${RACE_S} s race"
TA_OPERATOR_RACE_S=$RACE_S TA_OLD_ENTRY=$entry TA_OPERATOR_NODE="$node ${flags[*]}" \
  npx vitest run --config test/vitest.config.ts test/daemon/enroll-operator.test.ts
