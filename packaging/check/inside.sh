#!/bin/bash
# The install checks' steps, run inside a fresh Debian root (chroot, as root) by
# packaging/check-*.sh:  /root/check/inside.sh STEP [ARGS]
# Everything lives in /root/check (the package, faces, logs; results in /root/check/results).
# systemd does not run in the chroot, so run-daemon starts the daemon the way the unit does:
# the unit's own ExecStart=, Environment=, User=, UMask=, WorkingDirectory=, RuntimeDirectory= and
# LoadCredential= (credentials copied into a private folder for the service user).
set -euo pipefail

C=/root/check
SECRET=check-terminal-secret-0123456789abcdef
GROUP=check-group
APIKEY=check-api-key-0123456789
CONF=/etc/terminal-agent/config.yaml
STATE=/var/lib/terminal-agent
UNIT=/usr/lib/systemd/system/terminal-agent.service
# The package's node; check-systemd.sh's install.sh part has the package removed and its node on PATH.
NODE=/usr/lib/terminal-agent/bin/node
[ -x "$NODE" ] || NODE=$(command -v node || echo "$NODE")
export DEBIAN_FRONTEND=noninteractive
# Each check's emulator has its own port (roots share the host's network; checks may overlap).
PORT=$(cat "$C/port" 2>/dev/null || echo 8780)

ms() { echo $(($(date +%s%N) / 1000000)); }
note() { echo "check: $*"; }
fail() { echo "check: FAIL: $*" >&2; exit 1; }
result() { echo "$1=$2" >>"$C/results"; note "$1=$2"; }
creds() { CREDENTIALS_DIRECTORY=/etc/terminal-agent/credentials "$@"; }
mode_is() { # path "owner:group mode"
  local got; got=$(stat -c '%U:%G %a' "$1")
  [ "$got" = "$2" ] || fail "$1 is $got, expected $2"
}
wait_for() { # seconds description command...
  local secs=$1 deadline=$(($(date +%s) + $1)) what=$2; shift 2
  until "$@" >/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${secs}s waiting for $what"
    sleep 0.5
  done
}

install_pkg() { # deb [tag]
  apt-get update -qq >/dev/null
  local t0; t0=$(ms)
  apt-get install -y -q "$1" >"$C/apt-install.log" 2>&1 || { tail -n 40 "$C/apt-install.log"; fail "apt-get install $1"; }
  result "${2:-install}_ms" $(($(ms) - t0))
  grep -A5 "next steps" "$C/apt-install.log" || true
  dpkg-query -W -f='check: installed ${Package} ${Version} ${Architecture}\n' terminal-agent
  getent passwd terminal-agent >/dev/null || fail "no terminal-agent user"
  mode_is /etc/terminal-agent "root:terminal-agent 750"
  mode_is "$CONF" "root:terminal-agent 640"
  mode_is /etc/terminal-agent/credentials "root:root 700"
  mode_is /etc/terminal-agent/credentials/terminal_secret "root:root 600"
  mode_is "$STATE" "terminal-agent:terminal-agent 750"
  for d in faces voiceprints speakers knowledge; do mode_is "$STATE/enroll/$d" "terminal-agent:terminal-agent 2770"; done
  for d in enroll enroll/done enroll/failed; do mode_is "$STATE/$d" "terminal-agent:terminal-agent 3770"; done
  [ -L /etc/systemd/system/multi-user.target.wants/terminal-agent.service ] || fail "unit not enabled"
  grep -q "^ExecStart=$NODE " "$UNIT" || fail "ExecStart does not use the bundled node"
  for t in gcc cc make npm node nodejs; do ! command -v "$t" >/dev/null || fail "$t is installed: the check wants a root without it"; done
  note "no compiler, no npm, no system node; terminal-agent $(terminal-agent --version 2>&1 | head -n 1)"
}

configure() {
  sed -i -e "s#^  base_url: .*#  base_url: http://127.0.0.1:$PORT#" \
    -e "s#^  face_base_url: .*#  face_base_url: http://127.0.0.1:$PORT/v1/api#" \
    -e 's#^  output_device: default#  output_device: "null"#' -e 's#^  input_device: default#  input_device: "null"#' \
    -e 's#^  settle_time: 1s#  settle_time: 300ms#' -e 's#^    mode: refuse#    mode: "off"#' "$CONF"
  grep -q "^  base_url: http://127.0.0.1:$PORT\$" "$CONF" || fail "could not set service.base_url in $CONF"
  # The checks' faces are coloured discs (make-faces.mjs), which the face check refuses: it is off
  # for them, and the face_check step tries it on the package's own sample photos.
  ! grep -q '^    mode: refuse$' "$CONF" || fail "could not set enroll.face_check.mode in $CONF"
  # No sound card in a chroot: ALSA's default device becomes a null sink (speaker opens "default"
  # when it loads, whatever audio.output_device says, and aborts when it cannot).
  [ -e /etc/asound.conf ] || printf 'pcm.!default { type null }\nctl.!default { type hw card 0 }\n' >/etc/asound.conf
  printf '%s\n' "$SECRET" >/etc/terminal-agent/credentials/terminal_secret
  # The unit loads both credentials, and the agent refuses an empty one: the api_key is needed too.
  printf '%s\n' "$APIKEY" >/etc/terminal-agent/credentials/api_key
  creds terminal-agent config check --config "$CONF"
}

# The unit's Environment= assignments, one per line, as systemd reads them: the quotes around a
# whole assignment ("NODE_OPTIONS=a b") dropped, which env would not do.
unit_env() { sed -n 's/^Environment=//p' "$UNIT" | sed 's/^"\(.*\)"$/\1/'; }

# Node's compile cache (the entry calls module.enableCompileCache; the unit points NODE_COMPILE_CACHE
# at its CacheDirectory=): a CLI call fills the cache and the next is served from it, and what
# it saves, the CPU time of `--help` and `config check` with a warm cache and with none. And node
# runs with the unit's NODE_OPTIONS and node flags.
compile_cache() {
  local unit_opts r w node_flags=() cache=$C/compile-cache
  unit_opts=$(unit_env | sed -n 's/^NODE_OPTIONS=//p')
  for w in $(sed -n 's/^ExecStart=[^ ]* //p' "$UNIT"); do case $w in -*) node_flags+=("$w") ;; *) break ;; esac; done
  rm -rf "$cache"
  creds env NODE_COMPILE_CACHE="$cache" terminal-agent config check --config "$CONF" >/dev/null
  r=$(find "$cache" -type f 2>/dev/null | wc -l || true)
  note "compile cache after one config check: $r files"
  [ "$r" -gt 0 ] || fail "the CLI wrote nothing to NODE_COMPILE_CACHE ($cache)"
  # A V8 flag on the command line (the unit's --memory-saver-mode) makes node compile its own
  # modules without their built-in code cache: reported, and the flags must run.
  creds env NODE_OPTIONS="$unit_opts" "$NODE" "${node_flags[@]}" -e 0 || fail "node refuses the unit's node flags (${node_flags[*]}) or NODE_OPTIONS ($unit_opts)"
  r=$(env NODE_OPTIONS="$unit_opts" NODE_DEBUG_NATIVE=CODE_CACHE "$NODE" "${node_flags[@]}" -e 'require("node:http"); require("node:tls")' 2>&1 | grep -c ' is rejected$' || true)
  note "with the unit's NODE_OPTIONS and node flags (${node_flags[*]}), node's own modules compiled without their code cache: $r"
  cpu_ms() { local TIMEFORMAT='%3U %3S' t; t=$( { time creds env NODE_COMPILE_CACHE="$cache" terminal-agent "$@" >/dev/null 2>&1; } 2>&1 ); awk '{ printf "%d", ($1 + $2) * 1000 }' <<<"$t"; }
  local help_c check_c help_n check_n
  help_c=$(cpu_ms --help); check_c=$(cpu_ms config check --config "$CONF")
  cache=$C/compile-cache-none
  help_n=$(NODE_DISABLE_COMPILE_CACHE=1 cpu_ms --help); check_n=$(NODE_DISABLE_COMPILE_CACHE=1 cpu_ms config check --config "$CONF")
  result help_cpu_ms_cached "$help_c"; result help_cpu_ms_uncached "$help_n"
  result config_check_cpu_ms_cached "$check_c"; result config_check_cpu_ms_uncached "$check_n"
}

start_emulator() { # [latency]
  local args=(emulator --port "$PORT" --data "$C/emulator-data" --terminal "$SECRET:$GROUP" --api-key "$APIKEY" --json)
  [ -n "${1:-}" ] && args+=(--latency "$1")
  : >"$C/emulator.out"
  setsid terminal-agent "${args[@]}" >"$C/emulator.out" 2>"$C/emulator.err" </dev/null &
  echo $! >"$C/emulator.pid"
  wait_for 180 "the emulator" grep -q base_url "$C/emulator.out"
  note "emulator: $(head -c 120 "$C/emulator.out")"
}

doctor() {
  local rc=0
  creds terminal-agent doctor >"$C/doctor.txt" 2>&1 || rc=$?
  cat "$C/doctor.txt"
  [ "$rc" -eq 0 ] || fail "doctor exited $rc"
}

run_daemon() { # start the daemon as the unit would, wait for READY
  local exec_start envs=() cred name path gid
  exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
  while IFS= read -r e; do envs+=("$e"); done < <(unit_env)
  install -d -m 0750 -o terminal-agent -g terminal-agent /run/terminal-agent
  install -d -m 0755 -o terminal-agent -g terminal-agent /var/cache/terminal-agent
  cred=/run/credentials/terminal-agent.service
  rm -rf "$cred"; install -d -m 0500 -o terminal-agent -g terminal-agent "$cred"
  while IFS=: read -r name path; do
    install -m 0400 -o terminal-agent -g terminal-agent "$path" "$cred/$name"
  done < <(sed -n 's/^LoadCredential=//p' "$UNIT")
  gid=$(getent group audio | cut -d: -f3)
  local t0; t0=$(ms)
  echo "$t0" >"$C/daemon.start"
  # shellcheck disable=SC2086 # ExecStart= is split on spaces, as systemd does for this unit
  (cd "$STATE" && umask 0027 && exec setsid setpriv --reuid=terminal-agent --regid=terminal-agent --groups="$gid" \
    env "${envs[@]}" CREDENTIALS_DIRECTORY="$cred" $exec_start >>"$C/daemon.log" 2>&1 </dev/null) &
  echo $! >"$C/daemon.pid"
  wait_for 180 "READY (daemon.log: terminal-agent is ready)" ready_since "$t0"
  local ready_at; ready_at=$(ready_since "$t0")
  result "${1:-start}_to_ready_ms" $((ready_at - t0))
  terminal-agent status --config "$CONF" | head -n 8
}
ready_since() { # prints the time (ms) of the first ready line logged after $1
  "$NODE" -e '
    const since = Number(process.argv[1]);
    for (const l of require("fs").readFileSync(process.argv[2], "utf8").split("\n")) {
      try { const j = JSON.parse(l); const t = typeof j.time === "number" ? j.time : Date.parse(j.time);
        if (j.msg === "terminal-agent is ready" && t >= since) { console.log(t); process.exit(0); } } catch {}
    }
    process.exit(1);' "$1" "$C/daemon.log"
}

stop_daemon() {
  local pid t0; pid=$(cat "$C/daemon.pid"); t0=$(ms)
  kill -TERM "$pid"
  wait_for 40 "the daemon to drain and exit" sh -c "! kill -0 $pid 2>/dev/null"
  result drain_ms $(($(ms) - t0))
  ! grep -q '"level":60' "$C/daemon.log" || fail "the daemon logged a fatal error"
}

stop_emulator() { kill -TERM "$(cat "$C/emulator.pid")" 2>/dev/null || true; }

# An operator's private CA, trusted through the system's store (update-ca-certificates) with no
# service.ca_file: the CLI (/usr/bin/terminal-agent) and the daemon (the unit's NODE_OPTIONS) both
# run node with --use-openssl-ca, and this node's OpenSSL looks in /etc/ssl/certs. An HTTPS front
# for the emulator (test/bench/lib/tls-front.mjs, on the package's node) holds a certificate for
# localhost that no CA list has. Runs with the daemon started; leaves it running on plain http.
system_ca() {
  local origin
  rm -rf "$C/tls"; mkdir -p "$C/tls"; : >"$C/tls-front.out"
  (cd "$C" && exec setsid "$NODE" --input-type=module -e '
    const { startTlsFront } = await import("/root/check/tls-front.mjs");
    const f = await startTlsFront(process.argv[1], "/root/check/tls");
    if (f.error) { console.error(f.error); process.exit(1); }
    console.log(f.url(process.argv[1]));' "http://127.0.0.1:$PORT" >"$C/tls-front.out" 2>&1 </dev/null) &
  echo $! >"$C/tls-front.pid"
  wait_for 60 "the HTTPS front" grep -q '^https://' "$C/tls-front.out"
  # Its certificate names 127.0.0.1 too; a minbase root has no /etc/hosts to resolve localhost.
  origin=$(head -n 1 "$C/tls-front.out" | sed 's#^https://localhost:#https://127.0.0.1:#')
  cp "$CONF" "$C/config-http.yaml"
  sed -i -e "s#^  base_url: .*#  base_url: $origin#" -e "s#^  face_base_url: .*#  face_base_url: $origin/v1/api#" "$CONF"
  rm -f /usr/local/share/ca-certificates/check-private-ca.crt; update-ca-certificates >/dev/null 2>&1
  local rc=0; creds terminal-agent doctor >"$C/doctor-tls.txt" 2>&1 || rc=$?
  grep -q "^FAIL  tls base_url .*update-ca-certificates" "$C/doctor-tls.txt" || { cat "$C/doctor-tls.txt"; fail "doctor trusted an unknown CA, or did not name update-ca-certificates (exit $rc)"; }
  note "before: $(grep '^FAIL  tls base_url' "$C/doctor-tls.txt" | cut -c1-150)"
  cp "$C/tls/tls-front-cert.pem" /usr/local/share/ca-certificates/check-private-ca.crt
  update-ca-certificates 2>&1 | tail -n 1
  creds terminal-agent doctor >"$C/doctor-tls.txt" 2>&1 || { cat "$C/doctor-tls.txt"; fail "doctor over HTTPS after update-ca-certificates"; }
  note "after update-ca-certificates: $(grep 'tls base_url' "$C/doctor-tls.txt" | cut -c1-150)"
  stop_daemon
  run_daemon tls
  creds terminal-agent faces sync --config "$CONF" || fail "faces sync by the daemon over HTTPS"
  local n; n=$(creds terminal-agent faces list --json --config "$CONF" | "$NODE" -e 'let t="";process.stdin.on("data",(d)=>t+=d).on("end",()=>console.log(JSON.parse(t).length))')
  [ "$n" -gt 0 ] || fail "faces list over HTTPS found no face"
  note "the daemon synced and the CLI listed $n faces over HTTPS, trusted through the system's store"
  stop_daemon
  cp "$C/config-http.yaml" "$CONF"
  kill -TERM "$(cat "$C/tls-front.pid")" 2>/dev/null || true
  rm -f /usr/local/share/ca-certificates/check-private-ca.crt; update-ca-certificates >/dev/null 2>&1
  run_daemon restart
}

# The face check as the package runs it (its Node, TensorFlow.js, the model in models/): the sample
# portrait accepted and the sample group photo refused, by `faces add` with the check on.
face_check() {
  local samples=/usr/lib/terminal-agent/samples/faces refuse="$C/config-face-check.yaml" rc=0
  sed 's#^    mode: "off"$#    mode: refuse#' "$CONF" >"$refuse"
  creds terminal-agent faces add --name check-portrait "$samples/Grace Hopper.jpg" --config "$refuse" >"$C/face-check-ok.txt" 2>&1 ||
    fail "faces add refused the sample portrait: $(cat "$C/face-check-ok.txt")"
  creds terminal-agent faces add --name check-group "$samples/group photo.jpg" --config "$refuse" >"$C/face-check-group.txt" 2>&1 || rc=$?
  [ "$rc" -eq 65 ] && grep -q 'faces found' "$C/face-check-group.txt" ||
    fail "faces add of the sample group photo: exit $rc: $(cat "$C/face-check-group.txt")"
  note "face check: the sample portrait accepted, the group photo refused ($(grep -o '[0-9]* faces found[^"]*' "$C/face-check-group.txt" | head -n 1))"
}

drop_faces() { # prefix count
  local f
  for f in "$C/faces/$1"-*.png; do cp "$f" "$STATE/enroll/faces/.$(basename "$f").part"; mv "$STATE/enroll/faces/.$(basename "$f").part" "$STATE/enroll/faces/$(basename "$f")"; done
  note "dropped $(ls "$C/faces/$1"-*.png | wc -l) faces into $STATE/enroll/faces"
}
done_count() { find "$STATE/enroll/done/faces" -name "$1-*.png" 2>/dev/null | wc -l; }
wait_done() { # prefix count [timeout]
  wait_for "${3:-300}" "$2 faces in done/" sh -c "[ \$(find $STATE/enroll/done/faces -name '$1-*.png' 2>/dev/null | wc -l) -ge $2 ]"
  [ -z "$(find "$STATE/enroll/failed" -type f | head -n 5)" ] || fail "files in failed/: $(find "$STATE/enroll/failed" -type f | head -n 5)"
  note "all $2 '$1' faces reached done/faces"
}
wait_some_done() { # prefix count
  wait_for 300 "$2 faces in done/" sh -c "[ \$(find $STATE/enroll/done/faces -name '$1-*.png' 2>/dev/null | wc -l) -ge $2 ]"
  note "$(done_count "$1") '$1' faces done, the rest in flight or waiting"
}

exactly_once() { # prefix count: every face exists exactly once on the emulator
  creds terminal-agent faces list --json --config "$CONF" >"$C/faces.json"
  "$NODE" -e '
    const [file, prefix, n] = process.argv.slice(1);
    const faces = JSON.parse(require("fs").readFileSync(file, "utf8"));
    const counts = new Map();
    for (const f of faces) if (f.name.startsWith(prefix + "-")) counts.set(f.name, (counts.get(f.name) ?? 0) + 1);
    const dup = [...counts].filter(([, c]) => c !== 1);
    if (counts.size !== Number(n) || dup.length) { console.error("check: FAIL: expected", n, "faces once each, got", counts.size, "names, repeated:", JSON.stringify(dup)); process.exit(1); }
    console.log("check: the emulator holds each of the", n, prefix, "faces exactly once");' "$C/faces.json" "$1" "$2"
}

say_wav() {
  creds terminal-agent say "hello from the package check" --out "$C/hello.wav" --config "$CONF"
  [ "$(head -c 4 "$C/hello.wav")" = RIFF ] && [ "$(head -c 12 "$C/hello.wav" | tail -c 4)" = WAVE ] || fail "say --out wrote no WAV"
  note "say --out wrote a WAV of $(stat -c %s "$C/hello.wav") bytes"
}

remove_pkg() {
  apt-get remove -y -q terminal-agent >"$C/apt-remove.log" 2>&1 || { tail "$C/apt-remove.log"; fail "apt-get remove"; }
  dpkg-query -W -f='${Status}\n' terminal-agent | grep -q 'config-files' || fail "not in config-files state after remove"
  [ ! -e /usr/lib/terminal-agent ] && [ ! -e /usr/bin/terminal-agent ] || fail "code left after remove"
  [ -f "$STATE/agent.db" ] && [ -f "$CONF" ] && [ -s /etc/terminal-agent/credentials/terminal_secret ] || fail "remove lost state or config"
  getent passwd terminal-agent >/dev/null || fail "remove deleted the user"
  note "remove: code gone; $STATE/agent.db, $CONF, credentials and the user kept"
}

purge_pkg() {
  apt-get purge -y -q terminal-agent >"$C/apt-purge.log" 2>&1 || { tail "$C/apt-purge.log"; fail "apt-get purge"; }
  ! dpkg-query -W terminal-agent >/dev/null 2>&1 || dpkg-query -W -f='${Status}\n' terminal-agent | grep -q not-installed || fail "still known to dpkg"
  for p in "$STATE" /etc/terminal-agent /etc/systemd/system/multi-user.target.wants/terminal-agent.service; do
    [ ! -e "$p" ] || fail "$p left after purge"
  done
  ! getent passwd terminal-agent >/dev/null || fail "user left after purge"
  ! getent group terminal-agent >/dev/null || fail "group left after purge"
  ! dpkg-statoverride --list | grep -q terminal-agent || fail "statoverrides left after purge"
  note "purge: state, config, credentials, user, group and statoverrides gone"
}

# Anonymous resident KB (RssAnon: heaps and stacks, not file pages) of process PID.
anon_kb() { # pid
  awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"
}

# Seconds process PID has run (/proc: a minimal root has no ps).
run_seconds() { # pid
  awk -v up="$(cut -d' ' -f1 /proc/uptime)" -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d", up - $20 / hz }' "/proc/$1/stat"
}

has_run() { [ "$(run_seconds "$1")" -ge "$2" ]; } # pid seconds

# Waits until process PID has run SECONDS, then prints anon_kb of it.
anon_after() { # pid seconds
  wait_for $(($2 + 30)) "process $1 to have run $2 s" has_run "$1" "$2"
  anon_kb "$1"
}

status() { terminal-agent status --config "$CONF" | sed -n -e '/^terminal-agent/p' -e '/^outbox/,/^audio/p' | grep -v '^audio' || true; }

kept_after_upgrade() { # new-version
  local v; v=$(dpkg-query -W -f='${Version}' terminal-agent)
  [ "$v" = "$1" ] || fail "installed version is $v, expected $1"
  grep -q "^  base_url: http://127.0.0.1:$PORT\$" "$CONF" || fail "the upgrade changed $CONF"
  [ -f "$CONF.dpkg-dist" ] && fail "dpkg left $CONF.dpkg-dist"
  [ "$(cat /etc/terminal-agent/credentials/terminal_secret)" = "$SECRET" ] || fail "the upgrade changed the credentials"
  mode_is "$CONF" "root:terminal-agent 640"
  note "upgraded to $v: config (edited) and credentials kept, agent.db $(stat -c %s "$STATE/agent.db") bytes"
}

step=$1; shift
"$step" "$@"
