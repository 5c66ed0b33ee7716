#!/bin/sh
# BENCH_WRAP=test/bench/lib/strace-fsyncs.sh: which thread of the daemon makes each fsync and
# fdatasync, and on what file. An fsync on the main thread stops the event loop for the disk's
# whole flush (tens of ms on an SD card); one on libuv's pool does not. Profiling only: the
# daemon runs traced. Prints, when the daemon exits, counts per thread kind and file to stderr;
# the trace itself stays in STRACE_FSYNCS_OUT (default: a file in /tmp named on stderr).
# `strace-fsyncs.sh --summarize FILE` prints the counts of a trace kept so.
summarize() {
# The first line is the traced program's execve, on its main thread; threads come later.
awk '
  NR == 1 { main = $1; next }
  /^[0-9]+ +f(data)?sync\(/ {
    call = $2; sub(/\(.*/, "", call)
    file = $0; sub(/^[^<]*</, "", file); sub(/>.*/, "", file); n = split(file, parts, "/"); file = parts[n]
    # Names made per file or per write counted together: temp names, the cache images, results.
    sub(/\.[0-9a-f]+\.tmp$/, ".(temp)", file); sub(/^[0-9a-f]+\.jpg$/, "(image).jpg", file); gsub(/[0-9]+/, "N", file)
    key = ($1 == main ? "main thread" : "pool") " " call " " file
    count[key]++; total[$1 == main ? "main thread" : "pool"]++
  }
  END {
    for (k in total) printf "%s: %d fsync/fdatasync calls\n", k, total[k] > "/dev/stderr"
    for (k in count) printf "  %s: %d\n", k, count[k] > "/dev/stderr"
  }' "$1"
}
if [ "$1" = --summarize ]; then summarize "$2"; exit; fi
out=${STRACE_FSYNCS_OUT:-/tmp/ta-fsyncs.$$}
echo "strace of the daemon's fsyncs: $out" >&2
strace -f -qq -y -e trace=execve,fsync,fdatasync -o "$out" "$@"
code=$?
summarize "$out"
exit $code
