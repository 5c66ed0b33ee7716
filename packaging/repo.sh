#!/usr/bin/env bash
# Makes (or updates) a signed apt repository of terminal-agent packages with reprepro, ready to be
# served by any web server (or read through a file: source):
#
#   packaging/repo.sh REPO_DIR KEY_ID dist-pkg/terminal-agent_*_{amd64,arm64}.deb
#
# KEY_ID: a gpg key in the caller's keyring (GNUPGHOME) that signs the Release files; the
# terminals trust its public key (REPO_DIR/terminal-agent.gpg) through signed-by=. One suite,
# "stable", component "main", for amd64 and arm64; adding a newer version replaces the older one.
set -euo pipefail
repo=${1:?repository folder}; key=${2:?gpg key id}; shift 2
[ $# -gt 0 ] || { echo "repo.sh: no .deb given" >&2; exit 64; }
command -v reprepro >/dev/null || { echo "repo.sh: apt-get install reprepro" >&2; exit 1; }
mkdir -p "$repo/conf"
cat >"$repo/conf/distributions" <<CONF
Origin: terminal-agent
Label: terminal-agent
Codename: stable
Architectures: amd64 arm64
Components: main
Description: terminal-agent for edge terminals
SignWith: $key
CONF
printf 'verbose\n' >"$repo/conf/options"
for deb in "$@"; do reprepro -b "$repo" includedeb stable "$deb"; done
gpg --export "$key" >"$repo/terminal-agent.gpg"
reprepro -b "$repo" list stable
