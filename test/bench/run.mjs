// Runs the benchmarks one after another (each in its own process, so their peak RSS figures do
// not mix): `npm run bench` for all but the hour-long soak, `npm run bench -- faces-sync speech`
// for some (`-- soak` for the soak).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const all = readdirSync(here).filter((f) => f.endsWith('.mjs') && f !== 'run.mjs' && f !== 'pi-budget.mjs').map((f) => f.replace(/\.mjs$/, ''));
const byName = new Set(['soak']);
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; have: ${all.join(', ')}`);
  process.exit(64);
}
let failed = 0;
for (const name of wanted.length > 0 ? wanted : all.filter((n) => !byName.has(n))) {
  console.log(`\n=== ${name} (node test/bench/${name}.mjs)`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, `${name}.mjs`)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed += 1;
    console.log(`=== ${name} exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
