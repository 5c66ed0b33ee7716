import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadMallocTrim } from '../../src/util/malloc-trim.js';
import { tmpDir } from '../helpers/tmp.js';
// @ts-expect-error: a build script (JavaScript, no declarations), the one `npm run build:native` uses
import { placeFile } from '../../scripts/place-file.mjs';
import { FREED_IMAGES_JS } from '../helpers/freed-images.js';

// The agent's addon (native/malloc-trim, built by `npm run build` into dist/native/), in a real
// node process: what it gives back is RSS an operator sees in `systemctl status`.

const DIST_LOADER = new URL('../../dist/util/malloc-trim.js', import.meta.url).href;

// 60 MB of image buffers freed between small live ones (test/helpers/freed-images.ts).
const CHILD = `
import { loadMallocTrim } from ${JSON.stringify(DIST_LOADER)};
const rss = () => process.memoryUsage.rss() / 1048576;
${FREED_IMAGES_JS}
gc(); gc();
const loaded = loadMallocTrim();
const before = rss();
const released = 'trim' in loaded ? loaded.trim.trim() : loaded.missing;
console.log(JSON.stringify({ before, after: rss(), released, kept: kept.length }));
`;

// node's own pages (releaseNodePages): RSS before and after, what the process computes before and
// after (each answer needs code or data of node's binary that the release unmapped: the hash,
// ICU's collation and date formats, zlib, a built-in module first loaded afterwards), and the
// mappings of node's binary that hold private pages (RELRO, the writable data), which must keep them.
const NODE_PAGES_CHILD = `
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gzipSync, gunzipSync } from 'node:zlib';
import { loadMallocTrim } from ${JSON.stringify(DIST_LOADER)};
const rss = () => process.memoryUsage.rss() / 1048576;
const answers = () => [
  createHash('sha256').update('terminal-agent').digest('hex'),
  new Intl.DateTimeFormat('de-DE', { dateStyle: 'full', timeZone: 'UTC' }).format(new Date(0)),
  ['b', 'ä', 'a'].sort(new Intl.Collator('de').compare).join(''),
  gunzipSync(gzipSync('x'.repeat(1000))).length,
  JSON.stringify(JSON.parse('{"a":[1,2,{"b":null}]}')),
].join(' | ');
// node's binary's mappings that hold private pages, by address: their Anonymous kB.
const privatePages = () => {
  const exe = readFileSync('/proc/self/maps', 'utf8').split('\\n').find((l) => l.includes(' r-xp '))?.split(/\\s+/)[4];
  const out = {};
  let cur;
  for (const l of readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
    const head = /^([0-9a-f]+)-[0-9a-f]+ (\\S+) \\S+ \\S+ (\\d+)/.exec(l);
    if (head) cur = head[3] === exe ? head[1] + ' ' + head[2] : undefined;
    else if (cur && l.startsWith('Anonymous:')) { const kb = Number(l.split(/\\s+/)[1]); if (kb > 0) out[cur] = kb; }
  }
  return out;
};
const loaded = loadMallocTrim();
const before = { rss: rss(), answers: answers(), private: privatePages() };
const advised = loaded.trim.releaseNodePages();
const justAfter = rss();
const { request } = await import('node:https');
const after = { rss: rss(), answers: answers(), private: privatePages(), https: typeof request };
console.log(JSON.stringify({ before, advised, justAfter, after }));
`;

describe('malloc_trim addon', () => {
  it('unmaps node\'s start-up pages: RSS falls by most of them, and the process computes the same answers after', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', NODE_PAGES_CHILD], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as {
      before: { rss: number; answers: string; private: Record<string, number> }; advised: number; justAfter: number;
      after: { rss: number; answers: string; private: Record<string, number>; https: string };
    };
    expect(out.before.answers).toBe('d1a06e6ad3b2fb2804efd0e5a67a9d787beab6cdd1a00a3efa1c5e3fb0c42f20 | Donnerstag, 1. Januar 1970 | aäb | 1000 | {"a":[1,2,{"b":null}]}');
    expect(out.after.answers).toBe(out.before.answers);
    expect(out.after.https).toBe('function');
    // node's binary is 80 to 100 MB of address space (Node 20 and 24 on amd64), of which a bare node
    // has 25 to 35 MB resident after start-up.
    expect(out.advised).toBeGreaterThan(40 * 1048576);
    expect(out.before.rss - out.justAfter).toBeGreaterThan(15);
    // The private pages of node's binary (the relocated RELRO, its writable data) are all kept.
    expect(Object.keys(out.before.private).length).toBeGreaterThan(0);
    for (const [mapping, kb] of Object.entries(out.before.private)) expect(out.after.private[mapping], mapping).toBeGreaterThanOrEqual(kb);
  });

  it('hands the pages of freed buffers back to the kernel: RSS falls by most of the 60 MB they took', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { before: number; after: number; released: boolean | string };
    expect(out.released).toBe(true);
    // After the GC the freed buffers were still resident (glibc keeps free space between live chunks).
    expect(out.before).toBeGreaterThan(out.after + 30);
  });

  it('says why when the addon is not there or is not one, instead of failing the daemon', () => {
    const dir = tmpDir('ta-trim-');
    const gone = join(dir, 'malloc_trim.node');
    expect(loadMallocTrim([gone])).toEqual({ missing: `${gone} is not there: reinstall the package, or run npm run build in a checkout` });
    const broken = join(dir, 'broken.node');
    writeFileSync(broken, 'not an ELF file');
    const r = loadMallocTrim([broken]);
    expect('missing' in r && r.missing).toMatch(new RegExp(`^${broken.replace(/[.]/g, '\\.')} does not load: .*(invalid ELF|too short|file)`, 'i'));
  });

  it('is found by the code run from src/ (the checkout\'s dist/)', () => {
    const r = loadMallocTrim();
    expect('trim' in r).toBe(true);
  });

  it('a rebuild puts it in place without killing a daemon that has it loaded (npm run build beside a running demo)', async () => {
    // The addon as the build leaves it, loaded by a real node process that calls it every 2 ms, as
    // the daemon's heap trimmer does (less often). A copy over the loaded file kills that process
    // at its next call (SIGBUS or SIGSEGV: checked with copyFileSync in place-file.mjs).
    const dir = tmpDir('ta-trim-place-');
    const built = fileURLToPath(new URL('../../dist/native/malloc_trim.node', import.meta.url));
    const loaded = join(dir, 'malloc_trim.node');
    copyFileSync(built, loaded);
    const child = spawn(process.execPath, ['-e', `
      const m = require(${JSON.stringify(loaded)});
      let n = 0;
      setInterval(() => { m.trim(); n++; }, 2);
      process.stdout.write('loaded\\n');
      process.stdin.on('data', () => { const before = n; setTimeout(() => { process.stdout.write('calls after ' + (n - before) + '\\n'); process.exit(0); }, 300); });
    `], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const loadedOrExited = await Promise.race([
      new Promise<string>((resolve) => child.stdout.on('data', (b: Buffer) => { out += b.toString(); if (out.includes('loaded')) resolve('loaded'); })),
      exited.then((e) => `exited early: ${JSON.stringify(e)} ${err}`),
    ]);
    expect(loadedOrExited).toBe('loaded');
    await new Promise((r) => setTimeout(r, 50));

    (placeFile as (src: string, dest: string) => void)(built, loaded);
    child.stdin.write('go\n');

    expect(await exited).toEqual({ code: 0, signal: null });
    expect(err).toBe('');
    expect(Number(/calls after (\d+)/.exec(out)?.[1])).toBeGreaterThan(20);
  });
});
