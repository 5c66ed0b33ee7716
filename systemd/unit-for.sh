#!/bin/sh
# Prints systemd/terminal-agent.service pointed at NODE and PREFIX, for systemd/install.sh (a
# checkout installed as a service; the Debian package's unit is packaging/unit.sh's).
#   systemd/unit-for.sh NODE PREFIX [UNIT]
# ExecStart= keeps node's own flags between node and the program, but the inlining budget
# (--max-inlined-bytecode-size-cumulative) only on V8 11 (Node 20), where it was measured to pay
# (r13, r14). On a newer V8 a flag on node's command line makes node refuse its own modules' code
# cache and compile them at every start, and the budget no longer pays (r39: the package's
# Node 24 unit leaves it out for that reason).
set -eu
node=${1:?node binary}; prefix=${2:?prefix}
unit=${3:-$(dirname "$0")/terminal-agent.service}
v8=$("$node" -p 'process.versions.v8') || { echo "unit-for.sh: $node did not run" >&2; exit 1; }
case "$v8" in
  11.*) drop="" ;;
  *) drop='/^ExecStart=/s# --max-inlined-bytecode-size-cumulative=[0-9]*##' ;;
esac
# Restart back-off (5 s growing to 5 min over 5 restarts) where systemd knows it: 254 and later.
sd=$(systemctl --version 2>/dev/null | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
backoff='/^RestartSec=/a RestartSteps=5\nRestartMaxDelaySec=5min'
[ "${sd:-0}" -ge 254 ] || backoff=''
sed -e "$drop" -e "$backoff" -e "s#^ExecStart=/usr/bin/node #ExecStart=$node #" -e "s#/opt/terminal-agent/#$prefix/#g" "$unit"
