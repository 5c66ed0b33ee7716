#!/bin/bash
# The figures of docs/performance.md: every command behind them, one after another, each
# benchmark's output in its own file under OUT (default: a new folder under /tmp, printed).
# About 25 minutes on the 2-core development machine; as root (the Pi budget needs a cgroup,
# BENCH_FS a loop mount). Nothing else should run meanwhile: the figures are CPU and wall times.
#   bash test/bench/all-figures.sh [OUT]
set -u
cd "$(dirname "$0")/../.."
out=${1:-$(mktemp -d /tmp/ta-figures-XXXXXX)}
mkdir -p "$out"
echo "figures into $out"
npm run build > "$out/build.txt" 2>&1 || { echo "npm run build failed: $out/build.txt"; exit 1; }
run() {
  local name=$1; shift
  printf '%s  %s\n' "$(date -u +%H:%M:%S)" "$name: $*"
  env "$@" > "$out/$name.txt" 2>&1 || echo "  $name exited with $? (see $out/$name.txt)"
}
run cli RUNS=10 node test/bench/cli.mjs
run daemon STARTS=9 ROUNDS=3 node --expose-gc test/bench/daemon.mjs
run enroll BENCH_FS=ext4-nojournal RUNS=3 VARIANTS=0,20,pi node test/bench/enroll.mjs
run enroll-threads BENCH_FS=ext4-nojournal BENCH_THREADS=1 RUNS=2 VARIANTS=0 node test/bench/enroll.mjs
run enroll-warm BENCH_FS=ext4-nojournal BENCH_WARM=3000 BENCH_THREADS=1 RUNS=2 VARIANTS=0 node test/bench/enroll.mjs
run enroll-tls BENCH_FS=ext4-nojournal BENCH_TLS=1 RUNS=3 VARIANTS=0 node test/bench/enroll.mjs
run sync-ext4 BENCH_FS=ext4 BENCH_FIRST_ONLY=1 RUNS=3 VARIANTS=0,pi node test/bench/faces-sync.mjs
run sync-vm RUNS=1 VARIANTS=0 node test/bench/faces-sync.mjs
run sync-tls BENCH_FS=ext4-nojournal BENCH_TLS=1 BENCH_FIRST_ONLY=1 RUNS=2 VARIANTS=0 node test/bench/faces-sync.mjs
run enroll-disk BENCH_FS=ext4 RUNS=2 VARIANTS=0 AFTER_SECONDS=0 node test/bench/enroll.mjs
run disk-idle BENCH_FS=ext4 node test/bench/disk-idle.mjs
run speech node test/bench/speech.mjs
run console-syncs node test/bench/console-syncs.mjs
run tls-cipher node test/bench/tls-cipher.mjs
run console-10k BENCH_FACES=10000 ROUNDS=20 node test/bench/console.mjs
run face-check node test/bench/face-check.mjs 200
run face-freshness node test/bench/face-freshness.mjs
run transport COUNT=1000 ROUNDS=3 node test/bench/transport.mjs
printf '%s  done; the summaries:\n' "$(date -u +%H:%M:%S)"
grep -H -E '=>|median|RSS median|within|OUTSIDE|CPU [0-9.]+x|re-sync|thread|handshakes|a sync|GET /api/faces|thumb \(warm|first screen|peak RSS' "$out"/*.txt | grep -v '"level"' | awk '!seen[$0]++'
