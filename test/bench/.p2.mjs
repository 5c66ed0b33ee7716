import { spawn } from 'node:child_process';
const env = { ...process.env, ALSA_CONFIG_PATH: '/usr/share/alsa/alsa.conf:/tmp/alsatest/d.conf' };
for (let i=0;i<3;i++){
const t0=performance.now();
const c = spawn(process.execPath, ['/work/main/dist/audio/player-child.js'], { stdio: ['pipe','ignore','pipe','ipc'], env });
await new Promise(r => c.on('message', m => { console.log(m, performance.now()-t0); r(); }));
c.kill();
}
