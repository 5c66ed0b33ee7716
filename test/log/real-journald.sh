#!/bin/bash
# Runs the agent under a real systemd-journald, in a private mount namespace so that nothing on
# the host changes: `unshare -m test/log/real-journald.sh NODE CLI CONFIG` (root). Prints what
# journalctl then shows for the agent, as JSON, between markers; the test reads that.
set -eu
NODE=$1 CLI=$2 CONFIG=$3
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/journal
/lib/systemd/systemd-journald >/dev/null 2>&1 &
JPID=$!
trap 'kill $JPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
# As a systemd service: INVOCATION_ID set, stdout a pipe, the journal socket present.
INVOCATION_ID=0123456789abcdef0123456789abcdef "$NODE" "$CLI" run --config "$CONFIG" > /tmp/ta-journald-stdout.$$ 2>&1 &
APID=$!
for _ in $(seq 100); do
  journalctl --no-pager -q SYSLOG_IDENTIFIER=terminal-agent CODE=TA_ERR_AUTH 2>/dev/null | grep -q . && break
  sleep 0.1
done
kill -TERM $APID; wait $APID || true
echo '--- all'; journalctl --no-pager -q -o json SYSLOG_IDENTIFIER=terminal-agent
echo '--- warning'; journalctl --no-pager -q -o json -p warning SYSLOG_IDENTIFIER=terminal-agent
echo '--- faces'; journalctl --no-pager -q -o json SYSLOG_IDENTIFIER=terminal-agent COMPONENT=faces
echo '--- stdout'; cat /tmp/ta-journald-stdout.$$; rm -f /tmp/ta-journald-stdout.$$
echo '--- end'
