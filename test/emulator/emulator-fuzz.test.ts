import { describe, expect, it } from 'vitest';
import { fuzzInBatches, fuzzSeed, malformedRequests, seededRandom } from '../helpers/fuzz-http.js';
import { spawnEmulatorProcess } from '../helpers/emulator.js';

// The emulator (`terminal-agent emulator`, a real process) against 500+ malformed requests from a
// fixed seed (FUZZ_SEED replays another), over TCP, with the terminal's credentials so they reach
// the endpoints: after each batch it still answers, as the same process.

describe('the emulator under malformed requests', () => {
  it('answers each with a 4xx or 5xx and serves on as the same process', { timeout: 90_000 }, async () => {
    const emu = await spawnEmulatorProcess();
    const base = new URL(emu.ready.base_url);
    const pid = emu.child.pid;
    const secret = emu.ready.terminals[0]!.terminal_secret;
    const seed = fuzzSeed();
    console.log(`emulator fuzz: seed ${seed} (replay with FUZZ_SEED=${seed})`);
    const faces = new URL(emu.ready.face_base_url).pathname;
    const paths = [`${faces}/faces`, `${faces}/faces/f1`, `${faces}/faces/%zz/image`, '/tts', '/tts?text=hi', '/knowledge', '/knowledge/k1', '/agent/notify', '/train_speaker', '/voiceprint', '/__emulator/faults', '/__emulator/chaos', '/__emulator/requests'];
    const requests = malformedRequests(seededRandom(seed), 500, { paths, headers: { Host: base.host, Authorization: `Bearer ${secret}` } });
    let batch = 0;
    const answers = await fuzzInBatches({ host: base.hostname, port: Number(base.port) }, requests, 50, 400, async () => {
      batch += 1;
      expect(emu.child.exitCode, `the emulator exited after batch ${batch} (seed ${seed})\n${emu.output().stderr.slice(-2000)}`).toBeNull();
      expect(emu.child.pid).toBe(pid);
      const res = await fetch(`${emu.ready.base_url}/__emulator/requests`);
      expect(res.status, `GET /__emulator/requests after batch ${batch} (seed ${seed})`).toBe(200);
      await res.arrayBuffer();
    });
    expect(answers.filter((a) => a.answer.status !== undefined).length).toBeGreaterThan(answers.length / 2);
    for (const a of answers.filter((x) => x.req.kind.startsWith('hostile target '))) {
      expect(a.answer.status, a.req.kind).toBe(400);
    }
    expect(emu.output().stdout + emu.output().stderr).not.toContain('"level":"fatal"');
  });
});
