import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { runCliProcess } from '../helpers/cli.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { alsaCaptureDevice } from '../helpers/alsa-capture.js';
import { daemonFiles } from '../daemon/daemon-harness.js';
import { checkWritable } from '../../src/daemon/doctor-checks.js';
import { startTlsFront } from '../bench/lib/tls-front.mjs';

// doctor against a real emulator and real ALSA devices with no sound card: the `null` plugin as
// output and the `file` plugin (reading raw PCM) as a microphone.

function audioSetup(dir: string) {
  const out = makeTestAlsa(dir);
  const raw = join(dir, 'mic.raw');
  writeFileSync(raw, Buffer.alloc(16000 * 2));
  const mic = alsaCaptureDevice(dir, raw);
  return { output: out.device, input: mic.device, ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${out.confPath}:${mic.confPath}` };
}

interface Check { check: string; result: string; detail: string; fix?: string }

describe('terminal-agent doctor', () => {
  it('passes every check on a good setup, one line each, exit 0', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-doc-');
    const audio = audioSetup(dir);
    const files = daemonFiles(join(dir, 'agent'), emulator, { outputDevice: audio.output, inputDevice: audio.input, faceCheck: 'refuse' });
    const r = await runCliProcess(['doctor', '--config', files.configPath], { env: { ALSA_CONFIG_PATH: audio.ALSA_CONFIG_PATH } });
    expect(r.stdout).toContain('checks passed');
    expect(r.code).toBe(0);
    // The face check ran its detector (model from the package's models/ folder) on a probe image.
    expect(r.stdout).toMatch(/^ok +face check +mode refuse: the face detector loaded from \/.*\/models\/face-detector\/? and answered in \d+ ms$/m);
    for (const label of ['config', 'dns base_url', 'tcp base_url', 'credential terminal_secret', 'credential api_key', 'folder state_dir', 'folder enroll/faces', 'program arecord', 'audio output', 'audio input']) {
      expect(r.stdout).toMatch(new RegExp(`^ok +${label} `, 'm'));
    }
    expect(r.stdout).not.toMatch(/^FAIL/m);
    expect(r.stdout).not.toContain(emulator.terminals[0]!.terminal_secret);
    // The api key probe is a DELETE of a made-up id: nothing real is touched.
    expect(emulator.requests.filter((q) => q.method === 'DELETE').map((q) => q.status)).toEqual([404]);
  });

  it('fails with the fix on each line: refused credentials, a missing device, no arecord, a state_dir that is a file', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-doc-');
    const audio = audioSetup(dir);
    // PATH with aplay but no arecord, as on a device where alsa-utils was half removed.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync('/usr/bin/aplay', join(bin, 'aplay'));
    const files = daemonFiles(join(dir, 'agent'), emulator, { terminalSecret: 'not-the-secret-0000000', apiKey: 'not-the-key-00000000', outputDevice: 'nosuchpcm', inputDevice: audio.input });
    writeFileSync(files.stateDir, 'oops');
    const r = await runCliProcess(['doctor', '--json', '--config', files.configPath], { env: { ALSA_CONFIG_PATH: audio.ALSA_CONFIG_PATH, PATH: bin } });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { ok: boolean; failed: number; checks: Check[] };
    const byName = new Map(report.checks.map((c) => [c.check, c]));
    expect(byName.get('credential terminal_secret')).toMatchObject({ result: 'fail', detail: expect.stringContaining('401'), fix: expect.stringContaining('terminal secret') });
    expect(byName.get('credential api_key')).toMatchObject({ result: 'fail', detail: expect.stringContaining('401') });
    expect(byName.get('folder state_dir')).toMatchObject({ result: 'fail', detail: expect.stringContaining('not a folder') });
    expect(byName.get('program arecord')).toMatchObject({ result: 'fail', fix: 'apt-get install alsa-utils' });
    expect(byName.get('audio output')).toMatchObject({ result: 'fail', detail: expect.stringContaining('nosuchpcm'), fix: expect.stringContaining('aplay -L') });
    expect(byName.get('audio input')).toMatchObject({ result: 'fail', detail: 'arecord not found' });
    expect(byName.get('program aplay')).toMatchObject({ result: 'ok' });
    // The harness turns the face check off: doctor says what that lets through.
    expect(byName.get('face check')).toMatchObject({ result: 'warn', detail: expect.stringContaining('enroll.face_check.mode is off'), fix: expect.stringContaining('mode: refuse') });
    expect(report.ok).toBe(false);
    expect(r.stdout).not.toContain('not-the-secret-0000000');

    const human = await runCliProcess(['doctor', '--config', files.configPath], { env: { ALSA_CONFIG_PATH: audio.ALSA_CONFIG_PATH, PATH: bin } });
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^FAIL {2}credential terminal_secret +refused by .* \(401\) -- fix: /m);
    expect(human.stdout).toMatch(/^\d+ of \d+ checks passed, \d+ failed(, \d+ warnings?)?$/m);
  });

  it('reports an unreachable service and a broken config', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-doc-');
    const files = daemonFiles(join(dir, 'agent'), emulator);
    await emulator.close();
    const down = await runCliProcess(['doctor', '--json', '--config', files.configPath]);
    expect(down.code).toBe(1);
    const checks = (JSON.parse(down.stdout) as { checks: Check[] }).checks;
    expect(checks.find((c) => c.check === 'tcp base_url')).toMatchObject({ result: 'fail', detail: expect.stringMatching(/ECONNREFUSED/) });

    writeFileSync(files.configPath, 'service:\n  base_url: 42\n');
    const bad = await runCliProcess(['doctor', '--config', files.configPath]);
    expect(bad.code).toBe(78);
    expect(bad.stdout).toMatch(/^FAIL {2}config /m);
  });

  it('a ca_file that holds no certificate fails the config line, as the daemon would refuse it, and ends there (exit 78)', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-doc-');
    const files = daemonFiles(join(dir, 'agent'), emulator);
    const notCa = join(dir, 'notes.txt');
    writeFileSync(notCa, 'not a certificate\n');
    writeFileSync(files.configPath, readFileSync(files.configPath, 'utf8').replace('service:\n', `service:\n  ca_file: ${notCa}\n`));
    const r = await runCliProcess(['doctor', '--config', files.configPath]);
    expect(r.code).toBe(78);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^FAIL {2}config +${files.configPath}: service\\.ca_file: ${notCa} holds no PEM certificate \\(-----BEGIN CERTIFICATE-----\\) -- fix: `, 'm'));
    expect(r.stdout).toMatch(/^0 of 1 checks passed, 1 failed$/m);
  });

  it('over HTTPS: names the handshake\'s protocol and cipher; a certificate it does not trust fails with the fix naming ca_file', async () => {
    // The emulator speaks plain http: an https front with a self-signed certificate for localhost
    // (made with openssl, as the benchmarks' is) passes every request on to it.
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-doc-');
    const front = await startTlsFront(emulator.baseUrl, dir);
    if ('error' in front) throw new Error(front.error);
    try {
      const files = daemonFiles(join(dir, 'agent'), emulator);
      const overHttps = readFileSync(files.configPath, 'utf8')
        .replace(/^ {2}base_url: .*$/m, `  base_url: ${front.url(emulator.baseUrl)}`)
        .replace(/^ {2}face_base_url: .*$/m, `  face_base_url: ${front.url(emulator.faceBaseUrl)}`);
      writeFileSync(files.configPath, overHttps.replace('service:\n', `service:\n  ca_file: ${front.caFile}\n`));
      const trusted = await runCliProcess(['doctor', '--json', '--config', files.configPath]);
      const good = new Map((JSON.parse(trusted.stdout) as { checks: Check[] }).checks.map((c) => [c.check, c]));
      expect(good.get('tls base_url')).toMatchObject({ result: 'ok', detail: expect.stringMatching(/^localhost:\d+ TLSv1\.3 TLS_(AES_256_GCM_SHA384|CHACHA20_POLY1305_SHA256), certificate valid until \w+/) });
      expect(good.get('credential terminal_secret')).toMatchObject({ result: 'ok' });
      expect(front.handshakes.full).toBeGreaterThan(0);

      writeFileSync(files.configPath, overHttps);
      const untrusted = await runCliProcess(['doctor', '--json', '--config', files.configPath]);
      expect(untrusted.code).toBe(1);
      const bad = new Map((JSON.parse(untrusted.stdout) as { checks: Check[] }).checks.map((c) => [c.check, c]));
      expect(bad.get('tls base_url')).toMatchObject({ result: 'fail', detail: expect.stringContaining('DEPTH_ZERO_SELF_SIGNED_CERT'), fix: expect.stringContaining('service.ca_file') });
      // Node 24 (the package's runtime) appends advice about its own flags to the refusal; the
      // operator is told the fix that works here instead.
      expect(bad.get('tls base_url')!.detail).not.toMatch(/use-system-ca|Node\.js/);
      expect(bad.get('credential terminal_secret')).toMatchObject({ result: 'fail' });
    } finally {
      await front.close();
    }
  });

  it('a folder behind a dangling symlink (a stick not mounted) fails and names the link; an absent one under a writable parent is ok', async () => {
    const dir = tmpDir('ta-doc-');
    symlinkSync(join(dir, 'not-mounted'), join(dir, 'usb'));
    expect(await checkWritable('enroll.dir', join(dir, 'usb', 'enroll', 'faces'))).toMatchObject({
      result: 'fail',
      detail: `${join(dir, 'usb', 'enroll', 'faces')} is not there: ${join(dir, 'usb')} is a symlink to ${join(dir, 'not-mounted')}, which does not exist`,
      fix: expect.stringContaining('mount what'),
    });
    expect(await checkWritable('enroll.dir', join(dir, 'later', 'enroll'))).toMatchObject({ result: 'ok', detail: expect.stringContaining(`parent ${dir} writable`) });
  });
});
