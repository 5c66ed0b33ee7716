#!/usr/bin/env bash
# The fleet path, tried end to end: a throw-away signing key, a reprepro repository of the built
# packages (packaging/repo.sh), and a fresh Debian 13 amd64 root that trusts the key (signed-by=)
# and installs terminal-agent with plain `apt-get install terminal-agent` from a file: source.
#   sudo packaging/check-repo.sh [DEB ...]    (default: the newest amd64 and arm64 packages)
set -euo pipefail
. "$(dirname "$0")/check/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "check-repo.sh: run as root (chroot, mount)" >&2; exit 77; }
need reprepro reprepro
if [ $# -eq 0 ]; then set -- "$(deb_for amd64)" "$(deb_for arm64)"; fi
trap 'cleanup_all; rm -rf "$work"' EXIT
work=$(mktemp -d)
export GNUPGHOME="$work/gnupg"; mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key 'terminal-agent fleet repository (check) <fleet@example.invalid>' ed25519 sign 1d
key=$(gpg --list-keys --with-colons | awk -F: '/^fpr/ {print $10; exit}')
"$PKGDIR/repo.sh" "$work/repo" "$key" "$@"
fresh_root trixie amd64 repo-trixie-amd64; root=$ROOT
cp -a "$work/repo" "$root/srv/terminal-agent-repo"
install -m 0644 "$work/repo/terminal-agent.gpg" "$root/usr/share/keyrings/terminal-agent.gpg"
cat >"$root/etc/apt/sources.list.d/terminal-agent.sources" <<SRC
Types: deb
URIs: file:/srv/terminal-agent-repo
Suites: stable
Components: main
Signed-By: /usr/share/keyrings/terminal-agent.gpg
SRC
chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q terminal-agent >/tmp/install.log && dpkg-query -W -f="check: installed \${Package} \${Version} \${Architecture} from the signed repository\n" terminal-agent && apt-cache policy terminal-agent | head -n 6'
