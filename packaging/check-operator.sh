#!/usr/bin/env bash
# The enrollment folders as a security boundary (issue 71), with the long race: the operator tests
# of test/daemon/enroll-operator.test.ts with 60 s of symbolic-link flips (the default suite runs
# 10 s), against this checkout's dist/ (run `npm run build` first).
#
#   packaging/check-operator.sh [SECONDS]        (as root; about 90 s with the default 60)
#
# The daemon runs as nobody with a test group, the operator as another member of that group
# (setpriv); nothing outside enroll.dir may be read, sent, moved or written.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-operator.sh: run as root (the test switches users)" >&2; exit 77; }
[ -f "$SRC/dist/main.js" ] || { echo "check-operator.sh: $SRC/dist/main.js is missing: run npm run build" >&2; exit 1; }
cd "$SRC"
TA_OPERATOR_RACE_S=${1:-60} exec npx vitest run --config test/vitest.config.ts test/daemon/enroll-operator.test.ts
