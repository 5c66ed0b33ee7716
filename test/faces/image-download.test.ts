import { describe, expect, it } from 'vitest';
import { linkSync, mkdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { json, startHostileService, type Route } from '../helpers/hostile-service.js';
import { tmpDir } from '../helpers/tmp.js';
import { jpeg, png, readIndex } from './face-fixtures.js';
import { ID, imageRoutes, rec, syncAgainst } from './hostile-fixtures.js';

// A new face's image is put in faces/ while the others download (image-fetch.ts publish): written
// under a temp name, checked, then renamed to its final name. What a program watching faces/
// (inotify, as a face-recognition program may) sees of it: under its final name only the whole
// image, never a bad one or one cut short, nor a file there written into (writing straight
// under the final name, one rename less, was left out for this).

const served = (type: string, bytes: Buffer | string, length = true): Route => (_q, res) => {
  res.writeHead(200, { 'content-type': type, ...(length ? { 'content-length': Buffer.byteLength(bytes) } : {}) }).end(bytes);
};

describe('a new face image written in faces/', () => {
  it('a watcher sees each good image under its final name whole, and never the final name of a bad one', async () => {
    const small = jpeg(4096);
    const large = jpeg(200_000); // more than one 64 KB batch: several writes
    const routes = new Map<string, Route>([
      [ID(1), served('image/jpeg', small)],
      [ID(2), served('image/png', png(3000))],
      [ID(3), served('image/jpeg', small.subarray(0, small.length - 2))], // no end marker, its whole announced length
      [ID(4), served('image/jpeg', '<html><body>login</body></html>')],
      [ID(5), served('image/jpeg', large)],
      [ID(6), served('image/jpeg', small, false)], // chunked: no Content-Length
    ]);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [1, 2, 3, 4, 5, 6].map((n) => rec(n))) : imageRoutes(routes, small)(path));
    const h = await syncAgainst(svc, { concurrency: 2 });
    mkdirSync(h.facesDir, { recursive: true });
    const seen: string[] = [];
    const expected = new Map([[`${ID(1)}.jpg`, small], [`${ID(5)}.jpg`, large], [`${ID(6)}.jpg`, small]]);
    const torn: string[] = [];
    const watcher = watch(h.facesDir, (_event, name) => {
      if (!name) return;
      seen.push(name);
      // Read as soon as the name shows: it must hold the whole image already.
      let now: Buffer | undefined;
      try {
        now = readFileSync(join(h.facesDir, name));
      } catch {
        return; // gone again
      }
      if (expected.has(name) && !now.equals(expected.get(name)!)) torn.push(name);
    });
    try {
      const report = await h.sync.syncNow();
      await sleep(200); // inotify's last events
      expect(report).toMatchObject({ ok: true, added: 4, failed: 2 });
      expect(report.failures.map((f) => f.face_id).sort()).toEqual([ID(3), ID(4)]);
      const finals = [...new Set(seen.filter((n) => !n.startsWith('.')))].sort();
      expect(finals).toEqual([`${ID(1)}.jpg`, `${ID(2)}.png`, `${ID(5)}.jpg`, `${ID(6)}.jpg`, 'index.json', 'index.version']);
      expect(torn).toEqual([]);
      // Every other name it saw was a temp name (a dotfile, which a reader skips).
      expect(seen.filter((s) => !finals.includes(s)).every((s) => s.startsWith('.'))).toBe(true);
      const cached = Object.fromEntries(readIndex(h.facesDir).map((e) => [e.face_id, readFileSync(join(h.facesDir, e.image))]));
      expect(Object.keys(cached).sort()).toEqual([ID(1), ID(2), ID(5), ID(6)]);
      expect(cached[ID(1)]!.equals(small) && cached[ID(5)]!.equals(large) && cached[ID(6)]!.equals(small)).toBe(true);
    } finally {
      watcher.close();
      await h.close();
      await svc.close();
    }
  });

  it('a file already under the final name (a crash left it, or an enrollment wrote it meanwhile) is replaced whole, never written into', async () => {
    const image = jpeg(4096);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1)]) : imageRoutes(new Map(), image)(path));
    const h = await syncAgainst(svc);
    mkdirSync(h.facesDir, { recursive: true });
    const there = join(h.facesDir, `${ID(1)}.jpg`);
    writeFileSync(there, 'left over');
    // A second name for the file there: a reader holding it open sees the same.
    const held = join(tmpDir('ta-held-'), 'held');
    linkSync(there, held);
    try {
      const report = await h.sync.syncNow();
      expect(report).toMatchObject({ ok: true, added: 1 });
      expect(readFileSync(there).equals(image)).toBe(true);
      expect(readFileSync(held, 'utf8')).toBe('left over');
    } finally {
      await h.close();
      await svc.close();
    }
  });
});
