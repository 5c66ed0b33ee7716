#!/bin/sh
# /usr/bin/terminal-agent: the CLI on the Node.js runtime bundled in the package (Debian 12 ships
# Node 18, below what terminal-agent needs), whatever `node` is on PATH.
# --use-openssl-ca: TLS trusts the system's CAs (/etc/ssl/certs, update-ca-certificates), as the
# unit's daemon does, not the list built into node.
exec /usr/lib/terminal-agent/bin/node --use-openssl-ca /usr/lib/terminal-agent/dist/main.js "$@"
