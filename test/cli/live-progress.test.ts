import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { spawn } from 'node:child_process';
import { CLI_ENTRY, runCliProcess } from '../helpers/cli.js';
import { ERASE_LINE, plain, runCliInPty } from '../helpers/pty.js';
import { alsaCaptureDevice, makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';

// Progress of long work, as a person at a terminal sees it (a real pseudo-terminal through
// util-linux `script`), and as a script reading a pipe sees it: only the final lines.

let emulator: Emulator;
let tmp: { dir: string; remove(): void };
let withDaemon: DaemonFiles;
let daemon: DaemonProcess;
let local: DaemonFiles; // a config whose daemon is not running: commands work in-process
let inputs: CaptureInputs;
let mic: ReturnType<typeof alsaCaptureDevice>;

function framesOf(output: string, marker: string): number {
  return plain(output).split(marker).length - 1;
}

describe('live progress on a terminal, plain lines in a pipe', () => {
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, trainMs: 1500 });
    tmp = tmpDirManual('ta-live-');
    inputs = makeCaptureInputs(tmp.dir);
    withDaemon = daemonFiles(join(tmp.dir, 'daemon'), emulator);
    daemon = spawnDaemon(withDaemon.configPath);
    await daemon.waitLog(isReady);
    mic = alsaCaptureDevice(tmp.dir, inputs.speech);
    local = daemonFiles(join(tmp.dir, 'local'), emulator, { inputDevice: mic.device });
  });
  afterAll(async () => {
    daemon?.signal('SIGTERM');
    await daemon?.exited;
    await emulator?.close();
    tmp?.remove();
  });

  function seed(n: number, shade: number): void {
    emulator.seedFaces(emulator.terminals[0]!.group_id, Array.from({ length: n }, (_, i) => ({ name: `p${shade}-${i}`, image: faceImagePng([shade, i * 9, 255 - i * 9]) })));
  }

  it('faces sync through the daemon draws images done / total, bytes and rate, then the result line', async () => {
    seed(24, 10);
    emulator.faults.setChaos({ latencyMs: 400 });
    try {
      const r = await runCliInPty(['faces', 'sync', '--config', withDaemon.configPath]);
      expect(r.code, r.output).toBe(0);
      const text = plain(r.output);
      expect(text).toMatch(/face sync: \d+\/24 images \[[█░]+\] [\d.]+K?B at [\d.]+K?B\/s \(24 faces listed\)/);
      expect(framesOf(r.output, 'face sync: ')).toBeGreaterThanOrEqual(3);
      // The progress was erased, then the result printed in its place.
      const last = r.output.lastIndexOf(ERASE_LINE);
      expect(r.output.indexOf('face sync done (by the running daemon)')).toBeGreaterThan(last);
      expect(text).toContain('24 added');
    } finally {
      emulator.faults.clear();
    }
  });

  it('faces sync piped prints only the result line, and --json is unchanged on a terminal', async () => {
    seed(3, 40);
    const piped = await runCliProcess(['faces', 'sync', '--config', withDaemon.configPath]);
    expect(piped.code).toBe(0);
    // A manual sync also asks again for the 24 cached images (issue 72's re-checks): 3 + 24 requests.
    expect(piped.stdout).toMatch(/^face sync done \(by the running daemon\) in \S+: 3 added, 0 updated, 0 removed, 0 failed, 27 image requests; 27 faces cached\n$/);
    seed(1, 50);
    const json = await runCliInPty(['faces', 'sync', '--json', '--config', withDaemon.configPath]);
    expect(json.output).not.toContain('\u001b');
    expect(JSON.parse(json.output)).toMatchObject({ ok: true, added: 1, via: 'daemon' });
  });

  it('faces sync with no daemon shows the same progress from the sync it runs itself', async () => {
    const r = await runCliInPty(['faces', 'sync', '--config', local.configPath]);
    expect(r.code, r.output).toBe(0);
    expect(plain(r.output)).toMatch(/face sync: 28\/28 images/);
    expect(plain(r.output)).toContain('face sync done (in this process, no daemon running)');
  });

  it('voiceprint enroll counts down with a live level meter, then gives the verdict', async () => {
    const r = await runCliInPty(['voiceprint', 'enroll', '--name', 'Ada', '--seconds', '3', '--config', local.configPath], mic.env);
    expect(r.code, r.output).toBe(0);
    const text = plain(r.output);
    expect(text).toMatch(/recording "Ada": 2\.\d s left/);
    expect(text).toMatch(/recording "Ada": 0\.0 s left/);
    expect(text).toMatch(/level \[[█░]{24}\] -\d+ dBFS/);
    expect(framesOf(r.output, 'recording "Ada":')).toBeGreaterThanOrEqual(10);
    expect(r.output.indexOf('registered voiceprint "Ada"')).toBeGreaterThan(r.output.lastIndexOf(ERASE_LINE));
  });

  it('voiceprint enroll tells a far-away speaker to move closer while recording, then why it was refused', async () => {
    const far = alsaCaptureDevice(tmp.dir, inputs.quiet, 'farmic');
    const cfg = daemonFiles(join(tmp.dir, 'far'), emulator, { inputDevice: far.device });
    const r = await runCliInPty(['voiceprint', 'enroll', '--name', 'Bob', '--seconds', '2', '--config', cfg.configPath], far.env);
    expect(r.code).toBe(65);
    const text = plain(r.output);
    expect(text).toContain('move closer to the microphone');
    expect(text).toMatch(/too little speech/);
    // Piped: no meter, only the first line and the verdict.
    const piped = await runCliProcess(['voiceprint', 'enroll', '--name', 'Bob', '--seconds', '2', '--config', cfg.configPath], { env: far.env });
    expect(piped.code).toBe(65);
    expect(piped.stdout).toBe(`recording 2 s from ${far.device}: speak now\n`);
    expect(piped.stderr).toMatch(/too little speech/);
  });

  it('speaker train --wait shows the status and the time elapsed until it is trained', async () => {
    const wav = join(tmp.dir, 'speech-espeak.wav');
    const r = await runCliInPty(['speaker', 'train', '--text', 'hello there', '--wait', wav, '--config', local.configPath]);
    expect(r.code, r.output).toBe(0);
    const text = plain(r.output);
    expect(text).toMatch(/speaker \S+ \(tts-turbo\): training, [\d.]+s elapsed/);
    expect(framesOf(r.output, ' elapsed')).toBeGreaterThanOrEqual(3);
    expect(text).toMatch(/speaker \S+ \(tts-turbo\): trained/);
    const piped = await runCliProcess(['speaker', 'train', '--text', 'hello there', '--wait', wav, '--config', local.configPath]);
    expect(piped.stdout).toMatch(/^speaker \S+ \(tts-turbo\): trained\n$/);
  });

  it('Ctrl-C of speaker train --wait stops following, says the training goes on and how to follow it, exit 1', async () => {
    const wav = join(tmp.dir, 'speech-espeak.wav');
    const statusGets = () => emulator.requests.filter((r) => r.method === 'GET' && r.path === '/train_speaker' && r.status === 200).length;
    const before = statusGets();
    const child = spawn(process.execPath, [CLI_ENTRY, 'speaker', 'train', '--text', 'hello there', '--wait', wav, '--config', local.configPath]);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Interrupt once it follows the status (training lasts 1.5 s at this emulator): one answer seen.
    const deadline = Date.now() + 10_000;
    while (statusGets() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(1);
    expect(stdout).toBe('');
    const m = /interrupted: SIGINT; speaker (\S+) is still training on the service: follow it with: terminal-agent speaker status --model tts-turbo (\S+)/.exec(stderr);
    expect(m, stderr).not.toBeNull();
    expect(m![2]).toBe(m![1]);
    // The training went on: its status is there to follow.
    const st = await runCliProcess(['speaker', 'status', '--model', 'tts-turbo', m![1]!, '--config', local.configPath]);
    expect(st.code, st.stderr).toBe(0);
    expect(st.stdout).toMatch(/training|trained/);
  });

  it('status --watch redraws the status until Ctrl-C, and prints one block per round when piped', async () => {
    // --foreground: timeout then signals the CLI alone. Without it, it also signals its process
    // group, and on a loaded machine the CLI can take the two SIGINTs as two presses of Ctrl-C
    // (the second means "exit at once": 130), which a real Ctrl-C, one signal, never is.
    const r = await runCliInPty(['status', '--watch', '--interval', '0.5', '--config', withDaemon.configPath], {}, 'timeout --foreground --preserve-status -s INT 4');
    expect(r.code, r.output).toBe(0);
    expect(framesOf(r.output, 'terminal-agent status at ')).toBeGreaterThanOrEqual(3);
    expect(plain(r.output)).toContain(`pid ${daemon.pid}, running`);
    expect(r.output).toContain(ERASE_LINE);
    const piped = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn('timeout', ['--foreground', '--preserve-status', '-s', 'INT', '4', process.execPath, CLI_ENTRY, 'status', '--watch', '--interval', '0.5', '--config', withDaemon.configPath]);
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
      child.once('close', (code) => resolve({ code, stdout }));
    });
    expect(piped.code).toBe(0);
    expect(piped.stdout).not.toContain('\u001b');
    const blocks = piped.stdout.split(/^--- \d{4}-\d\d-\d\dT\S+Z$/m).filter((b) => b.trim());
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    for (const b of blocks) expect(b).toContain(`pid ${daemon.pid}, running`);
  });
});
