#!/bin/sh
# Prints systemd/terminal-agent.service pointed at NODE and PREFIX, for systemd/install.sh (a
# checkout installed as a service; the Debian package's unit is packaging/unit.sh's).
#   systemd/unit-for.sh NODE PREFIX [UNIT]
set -eu
node=${1:?node binary}; prefix=${2:?prefix}
unit=${3:-$(dirname "$0")/terminal-agent.service}
sed -e "s#^ExecStart=/usr/bin/node #ExecStart=$node #" -e "s#/opt/terminal-agent/#$prefix/#g" "$unit"
