import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadMallocTrim } from '../../src/util/malloc-trim.js';
import { tmpDir } from '../helpers/tmp.js';
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

describe('malloc_trim addon', () => {
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
});
