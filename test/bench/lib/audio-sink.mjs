// A sound card for benchmarks on machines without one: the reading end of a FIFO that ALSA's
// `file` plugin writes a player's PCM into (slave.pcm null, format raw; see
// /work/shared/audio-without-hardware.md and face-check.mjs), consumed at the sample rate as a
// device plays it. The FIFO (64 KB on Linux: 2 s of 16 kHz mono) is the device's buffer: a full
// one blocks the player, as a real device does. When what the device must have played by now is
// not there while the player still holds the device open, it ran dry: an underrun, a gap the
// listener hears.
//   node audio-sink.mjs FIFO BYTES_PER_SECOND
// One JSON line on stdout per phrase (the player opened the device, wrote, closed it, and all of it
// was played): {bytes, ms, underruns, at_ms (when each began, from the phrase's start), gap_ms}. Runs in a process of its own, so that the
// benchmark's own event loop (an emulator, pollers) does not make it late.
import { closeSync, constants, openSync, readSync } from 'node:fs';

const [fifo, rateArg] = process.argv.slice(2);
const rate = Number(rateArg);
const TICK_MS = 5;
/** The device's first period (20 ms of audio): it starts playing once it has that much. */
const START = Math.max(2, Math.round(rate / 50) & ~1);
const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
const buf = Buffer.alloc(1 << 16);

/**
 * The phrase being played: when it started, bytes played, underruns and the silence they made;
 * `clock`/`given`: the device's (re)start, and the bytes it was given since.
 */
let phrase;
/** When the device ran dry (the phrase waits for more), 0 while it plays. */
let dryAt = 0;

/** Bytes read now, up to `want`; 0 when the FIFO is empty; -1 at its end (no writer: the player closed the device). */
function take(want) {
  try {
    const n = readSync(fd, buf, 0, Math.min(want, buf.length), null);
    return n === 0 ? -1 : n;
  } catch (err) {
    if (err.code === 'EAGAIN') return 0;
    throw err;
  }
}

function end(now) {
  // Running dry just before the player closed the device is the phrase's end, not a gap.
  if (dryAt) {
    phrase.underruns--;
    phrase.at.pop();
  }
  process.stdout.write(`${JSON.stringify({ bytes: phrase.bytes, ms: Math.round(now - phrase.start), underruns: phrase.underruns, at_ms: phrase.at, gap_ms: Math.round(phrase.gapMs) })}\n`);
  phrase = undefined;
  dryAt = 0;
}

const timer = setInterval(() => {
  const now = performance.now();
  if (!phrase || dryAt) {
    const n = take(START);
    if (n < 0 && phrase) end(now);
    if (n <= 0) return;
    phrase ??= { start: now, bytes: 0, underruns: 0, gapMs: 0, at: [] };
    if (dryAt) phrase.gapMs += now - dryAt;
    dryAt = 0;
    // The device (re)starts with its first period, as ALSA's does at its start threshold.
    Object.assign(phrase, { clock: now, given: n });
    phrase.bytes += n;
    return;
  }
  // What a device playing since `clock` must have played by now, less what it was given.
  let due = Math.floor(((now - phrase.clock) / 1000) * rate) - phrase.given;
  while (due > 0) {
    const n = take(due);
    if (n < 0) return end(now);
    if (n === 0) {
      phrase.underruns++;
      phrase.at.push(Math.round(now - phrase.start));
      dryAt = now;
      return;
    }
    phrase.bytes += n;
    phrase.given += n;
    due -= n;
  }
}, TICK_MS);

process.on('SIGTERM', () => {
  clearInterval(timer);
  closeSync(fd);
  process.exit(0);
});
