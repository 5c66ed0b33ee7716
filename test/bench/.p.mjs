import { createPlayer } from '/work/main/dist/audio/player.js';
import { createLogger } from '/work/main/dist/log/logger.js';
import { Readable } from 'node:stream';
const dir='/tmp/alsatest';
const env = { ...process.env, ALSA_CONFIG_PATH: '/usr/share/alsa/alsa.conf:' + dir + '/d.conf' };
const p = createPlayer({ device: 'cap', env, logger: createLogger({level:'debug'}) });
p.warmUp();
await new Promise(r => setTimeout(r, 500));
for (let i=0;i<3;i++){
const t0 = performance.now();
const pcm = Readable.from([Buffer.alloc(32000)]);
const r = await p.play({sampleRate:16000, channels:1, bitsPerSample:16}, pcm, { onFirstFrame: () => console.log('ff', performance.now()-t0) });
console.log('done', performance.now()-t0, r);
}
await p.close();
