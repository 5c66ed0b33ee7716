#!/bin/sh
# Prints the package's systemd unit: systemd/terminal-agent.service pointed at the bundled node
# and the package prefix. Fails if the checkout's unit no longer has the lines it rewrites.
#   packaging/unit.sh systemd/terminal-agent.service /usr/lib/terminal-agent
set -eu
unit=${1:?unit file}; prefix=${2:?prefix}
# ExecStart= is node, node's own flags (if any), then the program: the first two are rewritten, and
# V8's --memory-saver-mode added, which the package's node knows (V8 13, packaging/node-version;
# a checkout's Node 20 refuses it): every full GC compacts and hands its free pages back. Measured
# on Node 24, 30 s after a burst of 1,000 enrolled files: RssAnon 42.0 and 42.8 MB with it, 64.2
# and 55.2 MB without (docs/design.md). A V8 flag on the command line makes node compile its own
# modules without their built-in code cache; start-up CPU measured within the noise (140 to 170 ms).
out=$(sed -e "/^ExecStart=/s#^ExecStart=/usr/bin/node \(\(-[^ ]* \)*\)/opt/terminal-agent/#ExecStart=$prefix/bin/node --memory-saver-mode \1$prefix/#" \
  -e "s#^Documentation=.*#Documentation=man:terminal-agent(1) file:///usr/share/doc/terminal-agent/README.md.gz#" \
  -e "s#^\# Installed by systemd/install.sh.*#\# Installed by the terminal-agent Debian package.#" "$unit")
printf '%s\n' "$out" | grep -q "^ExecStart=$prefix/bin/node \(-[^ ]* \)*$prefix/dist/main.js run " \
  || { echo "unit.sh: could not point ExecStart= of $unit at $prefix/bin/node" >&2; exit 1; }
if printf '%s\n' "$out" | grep -q '/opt/terminal-agent'; then echo "unit.sh: $unit still names /opt/terminal-agent after the rewrite" >&2; exit 1; fi
printf '%s\n' "$out"
