import { existsSync, renameSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { jpeg, put, readJson, startRig, waitFor, wav } from './fixtures.js';
import { steppableWallClock } from '../helpers/wall-clock.js';

// A terminal's wall clock is not to be trusted: a Raspberry Pi has no RTC and boots with the time
// it saved at shutdown until NTP answers (if the network lets NTP through at all), and NTP sets a
// clock that ran ahead back. Files' mtimes then lie ahead of the clock, and times the agent noted
// before a step back lie ahead of it after. Setting this machine's clock would disturb everything
// else on it, so the step back is made in this process only (helpers/wall-clock.ts); file mtimes
// ahead of the clock are real (utimes).

const DAY = 24 * 60 * 60_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the wall clock behind the files, set back or forward', () => {
  it('a speaker recording and text whose mtimes are two days ahead of the clock are trained at once, not in two days', async () => {
    const rig = await startRig({ emulator: { trainMs: 300 } });
    const ahead = new Date(Date.now() + 2 * DAY);
    for (const [rel, data] of [['speakers/kim.txt', 'copied with its times kept\n'], ['speakers/kim.wav', wav(1)]] as const) {
      const path = await put(rig.dir, `${rel}.part`, data);
      utimesSync(path, ahead, ahead);
      // Renamed into place, as a copy that keeps times (rsync -t, cp -p, unzip) finishes.
      renameSync(path, join(rig.dir, rel));
    }
    await waitFor('done/speakers/kim.json', () => existsSync(join(rig.dir, 'done/speakers/kim.json')), 10_000);
    expect(rig.emulator.state.speakers()).toMatchObject([{ audio_text: 'copied with its times kept', status: 1 }]);
  });

  it('a speaker still training when NTP sets the clock forward by six hours is followed to its end, not failed as timed out', async () => {
    const rig = await startRig({ emulator: { trainMs: 1500 } });
    // Installed after the rig: the emulator keeps the real clock (its training takes 1.5 s of it),
    // the agent's uploader reads the stepped one.
    const clock = steppableWallClock();
    await put(rig.dir, 'speakers/kim.txt', 'booted with the clock it saved at shutdown\n');
    await put(rig.dir, 'speakers/kim.wav', wav(1));
    await waitFor('training under way', () => rig.emulator.state.speakers().length === 1);
    expect(rig.emulator.state.speakers()[0]).toMatchObject({ status: 0 });
    // A Pi that was off for six hours, its agent started before NTP answered.
    clock.step(6 * 60 * 60_000);
    await waitFor('kim done or failed', () => existsSync(join(rig.dir, 'done/speakers/kim.json')) || existsSync(join(rig.dir, 'failed/speakers/kim.error.json')), 10_000);
    expect(existsSync(join(rig.dir, 'failed/speakers/kim.error.json'))).toBe(false);
    expect(readJson(join(rig.dir, 'done/speakers/kim.json'))).toMatchObject({ speaker_id: rig.emulator.state.speakers()[0]!.speaker_id, status: 1 });
  });

  it('uploads go on after the clock is set back by a day during a pause, and files found just before it settle as usual', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } });
    const clock = steppableWallClock();
    const rig = await startRig({ logger, emulator: { faults: [{ method: 'POST', path: '/v1/api/faces', action: 'status', status: 503, times: 1 }] } });
    await put(rig.dir, 'faces/lena.jpg', jpeg());
    await waitFor('the 503', () => rig.emulator.requests.some((r) => r.status === 503));
    await put(rig.dir, 'faces/mark.jpg', jpeg());
    // NTP steps the clock back by a day: the pause after the 503, lena's next attempt (stored) and
    // mark's settle wait were all noted before it.
    clock.step(-DAY);
    await waitFor('both done', () => existsSync(join(rig.dir, 'done/faces/lena.json')) && existsSync(join(rig.dir, 'done/faces/mark.json')), 10_000).catch((err: unknown) => {
      console.log(lines.join(''));
      throw err;
    });
    expect(rig.emulator.state.faces().map((f) => f.name).sort()).toEqual(['lena', 'mark']);
    expect(readJson(join(rig.dir, 'done/faces/lena.json')).attempts).toBe(2);
    const warning = lines.map((l) => JSON.parse(l) as { level: string; msg: string; rows?: number }).find((l) => l.msg.startsWith('the clock was set back'));
    expect(warning).toMatchObject({ level: 'warn', rows: 1 });
    expect(warning!.msg).toMatch(/more than an hour from now\): 1 waiting steps are due now$/);
  }, 20_000);
});
