#!/bin/sh
# /usr/bin/terminal-agent: the CLI on the Node.js runtime bundled in the package (Debian 12 ships
# Node 18, below what terminal-agent needs), whatever `node` is on PATH.
exec /usr/lib/terminal-agent/bin/node /usr/lib/terminal-agent/dist/main.js "$@"
