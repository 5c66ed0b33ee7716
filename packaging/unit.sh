#!/bin/sh
# Prints the package's systemd unit: systemd/terminal-agent.service pointed at the bundled node
# and the package prefix. Fails if the checkout's unit no longer has the lines it rewrites.
#   packaging/unit.sh systemd/terminal-agent.service /usr/lib/terminal-agent
set -eu
unit=${1:?unit file}; prefix=${2:?prefix}
# ExecStart= is node, node's own flags (if any), then the program: the first two are rewritten.
out=$(sed -e "/^ExecStart=/s#^ExecStart=/usr/bin/node \(\(-[^ ]* \)*\)/opt/terminal-agent/#ExecStart=$prefix/bin/node \1$prefix/#" \
  -e "s#^Documentation=.*#Documentation=man:terminal-agent(1) file:///usr/share/doc/terminal-agent/README.md.gz#" \
  -e "s#^\# Installed by systemd/install.sh.*#\# Installed by the terminal-agent Debian package.#" "$unit")
printf '%s\n' "$out" | grep -q "^ExecStart=$prefix/bin/node \(-[^ ]* \)*$prefix/dist/main.js run " \
  || { echo "unit.sh: could not point ExecStart= of $unit at $prefix/bin/node" >&2; exit 1; }
if printf '%s\n' "$out" | grep -q '/opt/terminal-agent'; then echo "unit.sh: $unit still names /opt/terminal-agent after the rewrite" >&2; exit 1; fi
printf '%s\n' "$out"
