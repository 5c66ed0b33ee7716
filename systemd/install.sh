#!/bin/sh
# Installs terminal-agent as a systemd service on a Debian / Raspberry Pi OS terminal.
#
#   sudo systemd/install.sh [--prefix /opt/terminal-agent] [--terminal-secret-file F] [--api-key-file F] [--start]
#
# Run it from a checkout where `npm ci` has been run (dist/ and node_modules/ present). It is
# idempotent: running it again updates the code and the unit (a running service is stopped before
# its code is replaced and started again after, as the Debian package does), and never overwrites
# the config or credentials already in place.
set -eu

PREFIX=/opt/terminal-agent
SECRET_FILE=""
KEY_FILE=""
START=no
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --terminal-secret-file) SECRET_FILE=$2; shift 2 ;;
    --api-key-file) KEY_FILE=$2; shift 2 ;;
    --start) START=yes; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
  esac
done

[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root (sudo)" >&2; exit 77; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$SRC/dist/main.js" ] && [ -d "$SRC/node_modules" ] || { echo "install.sh: $SRC has no dist/ or node_modules/: run 'npm ci' first" >&2; exit 1; }
NODE=$(command -v node) || { echo "install.sh: node not found on PATH (Node.js >= 20.19 is needed)" >&2; exit 1; }
command -v arecord >/dev/null || echo "install.sh: warning: arecord missing (apt-get install alsa-utils); voiceprint enroll will fail" >&2

USER_NAME=terminal-agent
STATE=/var/lib/terminal-agent
ETC=/etc/terminal-agent

# 1. The service user: a system account with no login and no home of its own.
if ! id "$USER_NAME" >/dev/null 2>&1; then
  useradd --system --user-group --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
fi

# 2. The code, owned by root (the service cannot modify itself). A running service is stopped
#    first (SIGTERM: it finishes the uploads in flight): it loads parts of its code lazily, and the
#    old code is removed below.
WAS_RUNNING=no
if [ -d /run/systemd/system ] && systemctl is-active --quiet terminal-agent.service; then
  echo "install.sh: stopping the running terminal-agent to replace its code"
  systemctl stop terminal-agent.service
  WAS_RUNNING=yes
fi
if [ "$SRC" != "$PREFIX" ]; then
  mkdir -p "$PREFIX"
  # Removed, not copied over: a running daemon has node_modules' native addons loaded, and a file
  # rewritten in place under it kills it (scripts/place-file.mjs); unlinked, they live on until it exits.
  rm -rf "$PREFIX/dist" "$PREFIX/node_modules"
  cp -a "$SRC/dist" "$SRC/node_modules" "$SRC/package.json" "$PREFIX/"
  [ -f "$SRC/README.md" ] && cp "$SRC/README.md" "$PREFIX/"
  chown -R root:root "$PREFIX"
fi
chmod 0755 "$PREFIX/dist/main.js"
ln -sf "$PREFIX/dist/main.js" /usr/local/bin/terminal-agent

# 3. Folders. State and enrollment belong to the service; the enrollment folders are group-writable
#    and setgid so operators in the terminal-agent group can drop files that the agent can move;
#    enroll/, done/ and failed/ are sticky too, so operators cannot rename or replace the folders
#    the agent works in (as packaging/debian/postinst).
install -d -m 0750 -o "$USER_NAME" -g "$USER_NAME" "$STATE"
for d in enroll enroll/faces enroll/voiceprints enroll/speakers enroll/knowledge enroll/done enroll/failed; do
  case "$d" in enroll|enroll/done|enroll/failed) mode=3770 ;; *) mode=2770 ;; esac
  install -d -m "$mode" -o "$USER_NAME" -g "$USER_NAME" "$STATE/$d"
done
install -d -m 0750 -o root -g "$USER_NAME" "$ETC"
install -d -m 0700 -o root -g root "$ETC/credentials"

# 4. Config: the example, once. Secrets do not go in it: systemd hands them over (LoadCredential=).
if [ ! -f "$ETC/config.yaml" ]; then
  install -m 0640 -o root -g "$USER_NAME" "$SRC/config/config.example.yaml" "$ETC/config.yaml"
  echo "install.sh: wrote $ETC/config.yaml: set service.base_url and service.face_base_url"
fi

# 5. Credentials: root-only files; systemd copies them into the unit's private credentials dir.
put_secret() { # name source option
  if [ -n "$2" ]; then
    install -m 0600 -o root -g root "$2" "$ETC/credentials/$1"
  elif [ ! -s "$ETC/credentials/$1" ]; then
    echo "install.sh: put the $1 in $ETC/credentials/$1 (one line, mode 0600), or rerun with $3 FILE" >&2
    : > "$ETC/credentials/$1"; chmod 0600 "$ETC/credentials/$1"
  fi
}
put_secret terminal_secret "$SECRET_FILE" --terminal-secret-file
put_secret api_key "$KEY_FILE" --api-key-file

# 6. The unit, pointed at this node and prefix (its flags as fit this node: unit-for.sh).
# Written beside, then renamed: a failure leaves the unit in place as it was.
"$SRC/systemd/unit-for.sh" "$NODE" "$PREFIX" "$SRC/systemd/terminal-agent.service" > /etc/systemd/system/terminal-agent.service.new
chmod 0644 /etc/systemd/system/terminal-agent.service.new
mv /etc/systemd/system/terminal-agent.service.new /etc/systemd/system/terminal-agent.service
# In a chroot or an image being built, systemd is not running: the unit is enabled (offline
# symlinks) and starts on first boot.
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
else
  echo "install.sh: systemd is not running here; the unit is installed and enabled for the next boot"
  START=no
fi
systemctl enable terminal-agent.service >/dev/null

echo "install.sh: installed. Next:"
echo "  sudoedit $ETC/config.yaml                     # base URLs, audio devices"
echo "  sudo CREDENTIALS_DIRECTORY=$ETC/credentials terminal-agent doctor --config $ETC/config.yaml"
echo "  sudo systemctl start terminal-agent && terminal-agent status --config $ETC/config.yaml"
echo "  operators who drop files or use the CLI: sudo usermod -aG $USER_NAME <user>"
if [ "$START" = yes ] || [ "$WAS_RUNNING" = yes ]; then
  [ "$WAS_RUNNING" = yes ] && echo "install.sh: starting terminal-agent again, on the new code"
  systemctl restart terminal-agent.service
  systemctl --no-pager status terminal-agent.service | head -n 5
fi
