#!/bin/sh
# Prints systemd/terminal-agent.service pointed at NODE and PREFIX, for systemd/install.sh (a
# checkout installed as a service; the Debian package's unit is packaging/unit.sh's).
#   systemd/unit-for.sh NODE PREFIX [UNIT]
set -eu
node=${1:?node binary}; prefix=${2:?prefix}
unit=${3:-$(dirname "$0")/terminal-agent.service}
# Restart back-off (5 s growing to 5 min over 5 restarts) where systemd knows it: 254 and later.
sd=$(systemctl --version 2>/dev/null | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
backoff='/^RestartSec=/a RestartSteps=5\nRestartMaxDelaySec=5min'
[ "${sd:-0}" -ge 254 ] || backoff=''
sed -e "$backoff" -e "s#^ExecStart=/usr/bin/node #ExecStart=$node #" -e "s#/opt/terminal-agent/#$prefix/#g" "$unit"
