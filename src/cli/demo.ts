import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { pino } from 'pino';
import type { CliContext } from './command.js';
import { writeLine } from './output.js';
import { DaemonError, describeError, isProgramReplaced, missingProgramFile } from '../errors.js';
import { startEmulator, type Emulator, type TerminalCredential } from '../emulator/index.js';
import { encodeWav } from '../audio/wav.js';
import { loadDaemonConfig, makeDaemonEnv } from './daemon-env.js';
import { startDaemon, stopAsked } from '../daemon/daemon.js';
import { faceImagePng, SAMPLE_FACES } from '../daemon/sample-images.js';
import { makeDir } from '../util/make-dir.js';

// `terminal-agent demo`: the emulator and the daemon in one process, everything under ./demo/, so
// that someone can try the product in a minute with no account and no hardware. Credentials are
// kept in demo/credentials.json so a second run finds the same faces in the emulator's data.

const MAX_SOCKET_PATH = 107;

export async function runDemo(ctx: CliContext): Promise<number> {
  const dir = join(ctx.cwd, 'demo');
  await makeDir(join(dir, 'secrets'), 0o700);
  await makeDir(join(dir, 'samples'));
  const creds = await demoCredentials(join(dir, 'credentials.json'));
  const emulator = await startEmulator({ port: 0, dataDir: join(dir, 'emulator'), terminals: creds.terminals, apiKey: creds.apiKey });
  let stopDaemon: (() => Promise<boolean>) | undefined;
  try {
    const group = creds.terminals[0]!.group_id;
    if (emulator.state.faces(group).length === 0) {
      emulator.seedFaces(group, SAMPLE_FACES.map((f) => ({ name: f.name, image: faceImagePng(f.color) })));
    }
    await writeSamples(join(dir, 'samples'));
    const configPath = join(dir, 'config.yaml');
    await writeFile(join(dir, 'secrets', 'terminal_secret'), `${creds.terminals[0]!.terminal_secret}\n`, { mode: 0o600 });
    await writeFile(join(dir, 'secrets', 'api_key'), `${creds.apiKey}\n`, { mode: 0o600 });
    await writeFile(configPath, demoConfig(emulator, socketPathFor(dir), await consoleListen()));
    const config = await loadDaemonConfig(ctx, configPath);
    // The daemon's JSON log goes to a file: the terminal shows the instructions.
    const destination = pino.destination({ dest: join(dir, 'agent.log'), mkdir: true, sync: true });
    const d = makeDaemonEnv(ctx, { configPath, config, destination });
    const daemon = await startDaemon(d, config, ctx.shutdown);
    stopDaemon = () => daemon.stop();
    writeLine(ctx, instructions(dir, emulator, config.control.socket, daemon.consoleUrl));
    await stopAsked(daemon, ctx.shutdown);
    if (!ctx.shutdown.aborted) {
      // The daemon cannot go on (its log says why): no systemd restarts a demo, so say it here.
      await daemon.stop();
      stopDaemon = undefined;
      const reason: unknown = daemon.restartNeeded.reason;
      if (!isProgramReplaced(reason)) {
        throw new DaemonError(`the demo stopped: a reload could not start its components again (${describeError(reason)}); start 'terminal-agent demo' again (everything stays in ${dir})`, { cause: reason });
      }
      throw new DaemonError(`the demo stopped: its program files were replaced while it ran (${missingProgramFile(reason)} is missing: an upgrade?); start 'terminal-agent demo' again (everything stays in ${dir}), and if this comes again, reinstall terminal-agent`, { cause: reason });
    }
    writeLine(ctx, 'stopping the demo...');
    const clean = await daemon.stop();
    stopDaemon = undefined;
    writeLine(ctx, `demo stopped${clean ? '' : ' (some work was cut short; it resumes at the next run)'}; everything stays in ${dir}`);
    return clean ? 0 : 1;
  } finally {
    if (stopDaemon) await stopDaemon().catch(() => {});
    await emulator.close();
  }
}

async function demoCredentials(path: string): Promise<{ terminals: TerminalCredential[]; apiKey: string }> {
  try {
    const saved = JSON.parse(await readFile(path, 'utf8')) as { terminals: TerminalCredential[]; apiKey: string };
    if (Array.isArray(saved.terminals) && saved.terminals.length > 0 && typeof saved.apiKey === 'string') return saved;
  } catch {
    // first run
  }
  const hex = (n: number) => createHash('sha256').update(`${Date.now()}-${Math.random()}-${n}`).digest('hex');
  const made = { terminals: [{ terminal_secret: `ts_${hex(1).slice(0, 32)}`, group_id: `demo-${hex(2).slice(0, 8)}` }], apiKey: `ak_${hex(3).slice(0, 32)}` };
  await writeFile(path, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 });
  return made;
}

/** ./demo/control.sock when the path fits in a unix socket address, else one in the temp folder. */
function socketPathFor(dir: string): string {
  const p = join(dir, 'control.sock');
  if (Buffer.byteLength(p) <= MAX_SOCKET_PATH) return p;
  return join(tmpdir(), `terminal-agent-demo-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}.sock`);
}

/** The web console on 127.0.0.1:8080, or on a free port when 8080 is taken. */
async function consoleListen(): Promise<string> {
  const free = await new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(8080, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
  return free ? '127.0.0.1:8080' : '127.0.0.1:0';
}

function demoConfig(emulator: Emulator, socket: string, consoleAddr: string): string {
  return `# Generated by 'terminal-agent demo' for its emulator (rewritten at every demo start).
service:
  base_url: ${emulator.baseUrl}
  face_base_url: ${emulator.faceBaseUrl}
  terminal_secret_file: secrets/terminal_secret
  api_key_file: secrets/api_key
  request_timeout: 10s
state_dir: state
faces:
  sync_interval: 30s
enroll:
  dir: enroll
  rescan_interval: 10s
audio:
  output_device: default
  input_device: default
control:
  socket: ${JSON.stringify(socket)}
console:
  listen: ${consoleAddr}    # loopback only, so no login; beyond it, set password_hash
log:
  level: info
`;
}

/** The package's sample photos (samples/faces/README.md): two public-domain portraits and a group photo the face check refuses. */
const SAMPLE_PHOTOS = fileURLToPath(new URL('../../samples/faces/', import.meta.url));

async function writeSamples(dir: string): Promise<void> {
  for (const name of ['Grace Hopper.jpg', 'Eileen Collins.jpg', 'group photo.jpg']) await copyFile(join(SAMPLE_PHOTOS, name), join(dir, name));
  await writeFile(join(dir, 'welcome.md'), '# Welcome\nThis terminal answers questions about the building.\n');
  // Two seconds of a gliding tone, 16 kHz mono: something a voiceprint upload accepts.
  const rate = 16000;
  const pcm = Buffer.alloc(rate * 2 * 2);
  for (let i = 0; i < rate * 2; i++) {
    const f = 180 + 60 * Math.sin((2 * Math.PI * i) / rate);
    pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * f * i) / rate)), i * 2);
  }
  await writeFile(join(dir, 'alice.wav'), encodeWav({ sampleRate: rate, channels: 1, bitsPerSample: 16 }, pcm));
}

function instructions(dir: string, emulator: Emulator, socket: string, consoleUrl: string | undefined): string {
  const rel = 'demo';
  const cfg = `--config ./${rel}/config.yaml`;
  return `terminal-agent demo is running (Ctrl-C stops it).

  web console   ${consoleUrl ?? '(not listening: see ./demo/agent.log)'}   open it in a browser on this machine
  emulator      ${emulator.baseUrl}  (faces at ${emulator.faceBaseUrl})
  config        ./${rel}/config.yaml   secrets in ./${rel}/secrets/
  state         ./${rel}/state/  (agent.db, faces/index.json, faces/<face_id>.png)
  control       ${socket}
  daemon log    ./${rel}/agent.log  (JSON lines)

The emulator holds ${SAMPLE_FACES.length} sample faces; the daemon syncs them into ./${rel}/state/faces/.

Drop files into ./${rel}/enroll/ (originals end in done/ or failed/):
  cp "./${rel}/samples/Grace Hopper.jpg" ./${rel}/enroll/faces/     # her sample face becomes this public-domain portrait
  cp "./${rel}/samples/group photo.jpg" ./${rel}/enroll/faces/      # refused by the face check: see enroll/failed/faces/
  cp ./${rel}/samples/alice.wav ./${rel}/enroll/voiceprints/        # a voiceprint named alice
  cp ./${rel}/samples/welcome.md ./${rel}/enroll/knowledge/         # knowledge entry "welcome"

Then try, in another terminal:
  npx terminal-agent status ${cfg}
  npx terminal-agent faces list --cached ${cfg}
  npx terminal-agent faces sync ${cfg}
  npx terminal-agent say "Hello from the terminal" ${cfg}      # needs a sound card, else a clear error
  npx terminal-agent say "Hello" --out ./${rel}/hello.wav ${cfg}  # the WAV into a file, no sound card needed
  npx terminal-agent voices ${cfg}
  npx terminal-agent doctor ${cfg}
  curl --unix-socket ${socket} http://agent/metrics
  tail -f ./${rel}/agent.log

Everything stays in ${dir}; delete it to start afresh.`;
}
