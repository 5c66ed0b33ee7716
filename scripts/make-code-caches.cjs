// `node make-code-caches.cjs --unit UNIT_FILE [--unit DROP_IN...] [--timeout SECONDS]` (copied by scripts/bundle.mjs to
// dist/bundle/): makes the V8 code caches of the bundle's chunks (<chunk>.<key>.v8 beside them, see
// loader.cjs) by running the commands a terminal runs most, each in its own process through
// code-cache.cjs, one after another: a later run starts from the caches of the earlier ones and
// adds what it compiled. The CLI runs as a user starts it (no NODE_OPTIONS); the daemon with the
// unit's NODE_OPTIONS and the node flags of its ExecStart= (its caches are made for those V8 flags),
// against a service that is not there, until its control socket answers `status`.
//
// Run at build time (scripts/bundle.mjs) and, for the Debian package, on the device by postinst:
// the caches fit only the node binary and CPU that made them (loader.cjs), so the package ships
// none. Every cache is written to a temporary name and renamed, so a CLI call running meanwhile
// reads a whole cache or none. A run first removes the caches already there (of chunks a previous
// version had, or made by another node). Prints what it made; exits 1 if the CLI or the daemon set
// is missing, and never leaves a process behind (each run is killed after --timeout seconds).
'use strict';
const { spawn } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const DIR = __dirname;
const CACHE_FILE = /\.v8(\.\d+\.tmp)?$/;

function options(argv) {
  const o = { units: [], timeoutMs: 60_000 };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--unit' && argv[i + 1]) o.units.push(argv[i + 1]);
    else if (argv[i] === '--timeout' && Number(argv[i + 1]) > 0) o.timeoutMs = Number(argv[i + 1]) * 1000;
    else throw new Error(`make-code-caches: unknown option ${argv[i]} (--unit UNIT_FILE [--timeout SECONDS])`);
  }
  if (o.units.length === 0) throw new Error('make-code-caches: --unit UNIT_FILE is required (the daemon\'s caches are made with its node flags)');
  return o;
}

/** NODE_OPTIONS as the unit and then its drop-ins set it (Environment=NODE_OPTIONS=..., quoted or
 * not; the last one wins, as in systemd); {} when none does. */
function unitNodeOptions(files) {
  let value;
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^Environment=(?:"NODE_OPTIONS=(.*)"|NODE_OPTIONS=(.*))$/gm)) value = m[1] ?? m[2];
  }
  return value ? { NODE_OPTIONS: value } : {};
}

/** The node flags of the unit's ExecStart= (between node and the program), as the unit and then its
 * drop-ins set it: an empty `ExecStart=` clears, the last one wins. [] when it has none. */
function unitNodeArgs(files) {
  let words = [];
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^ExecStart=(.*)$/gm)) words = m[1].trim().split(/\s+/).filter(Boolean);
  }
  const args = [];
  for (const w of words.slice(1)) {
    if (!w.startsWith('-')) break;
    args.push(w);
  }
  return args;
}

/** Cache files in DIR, counted by their key (the part between the chunk's name and .v8). */
function cachesByKey() {
  const counts = new Map();
  for (const name of readdirSync(DIR)) {
    const m = /^.+\.js\.([0-9a-f]+)\.v8$/.exec(name);
    if (m) counts.set(m[1], (counts.get(m[1]) ?? 0) + 1);
  }
  return counts;
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

async function main() {
  const o = options(process.argv.slice(2));
  const unitEnv = unitNodeOptions(o.units);
  const nodeArgs = unitNodeArgs(o.units);
  process.umask(0o022); // readable by the service user whatever umask the caller has
  for (const name of readdirSync(DIR)) if (CACHE_FILE.test(name)) rmSync(join(DIR, name), { force: true });
  const scratch = mkdtempSync(join(tmpdir(), 'ta-code-cache-'));
  // No ALSA device is touched: the daemon's player warm-up loads speaker, which opens "default".
  writeFileSync(join(scratch, 'asound.conf'), 'pcm.!default { type null }\n');
  const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratch, ALSA_CONFIG_PATH: join(scratch, 'asound.conf') };
  const children = new Set();
  const run = (args, env = baseEnv, flags = []) => {
    const child = spawn(process.execPath, [...flags, join(DIR, 'code-cache.cjs'), DIR, ...args], { stdio: 'ignore', env });
    children.add(child);
    child.done = new Promise((res) => child.once('close', res)).then(() => children.delete(child));
    child.timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
    child.done.then(() => clearTimeout(child.timer));
    return child;
  };
  let daemonAnswered = false;
  try {
    const config = join(scratch, 'config.yaml');
    const socket = join(scratch, 'ctl.sock');
    writeFileSync(join(scratch, 'secret'), 'code-cache-secret\n');
    writeFileSync(config, `service:\n  base_url: http://127.0.0.1:9\n  face_base_url: http://127.0.0.1:9/v1/api\n  terminal_secret_file: ${join(scratch, 'secret')}\nstate_dir: ${join(scratch, 'state')}\ncontrol:\n  socket: ${socket}\nenroll:\n  dir: ${join(scratch, 'enroll')}\naudio:\n  output_device: "null"\n  input_device: "null"\nlog:\n  level: error\n`);
    // A command that fails still leaves the caches of what it ran.
    for (const args of [['--help'], ['faces', 'list', '--help'], ['config', 'check', '--config', config], ['faces', 'list', '--cached', '--config', config]]) await run(args).done;
    const daemon = run(['run', '--config', config], { ...baseEnv, ...unitEnv }, nodeArgs);
    const deadline = Date.now() + o.timeoutMs;
    while (!existsSync(socket) && children.has(daemon) && Date.now() < deadline) await sleep(50);
    const status = run(['status', '--config', config]);
    await status.done;
    daemonAnswered = status.exitCode === 0;
    daemon.kill('SIGTERM');
    await daemon.done;
  } finally {
    for (const child of children) child.kill('SIGKILL');
    rmSync(scratch, { recursive: true, force: true });
  }
  const keys = cachesByKey();
  const summary = [...keys].map(([key, n]) => `${n} (key ${key})`).join(', ') || 'none';
  const wanted = unitEnv.NODE_OPTIONS || nodeArgs.length > 0 ? 2 : 1;
  if (keys.size < wanted || !daemonAnswered) {
    process.stderr.write(`make-code-caches: incomplete (${daemonAnswered ? '' : 'the daemon did not answer status; '}caches: ${summary}): start-up compiles what has none\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`make-code-caches: V8 code caches for the CLI and the daemon: ${summary}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
