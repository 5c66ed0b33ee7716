import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readHead } from '../../src/util/media-sniff.js';
import { NotRegularFileError, openRegularFile } from '../../src/util/safe-open.js';
import { jpeg, listFiles, put, readJson, sha256, startRig, waitFor, wav } from './fixtures.js';
import { tmpDir } from '../helpers/tmp.js';

// Things that are not regular files, dropped where files belong (a FIFO, a socket, a device
// node, a folder in voiceprints/), hard links, and a file replaced while it is being uploaded.
// Real FIFOs (mkfifo), a real listening unix socket and a real device node (mknod, when the tests
// run as root, as they do here).

function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

async function listenOn(path: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

describe('not regular files in the enrollment folders', () => {
  it('a FIFO, a socket, a device node and folders are moved to failed/ with the reason, once, and never block the daemon', async () => {
    const rig = await startRig();
    mkfifo(join(rig.dir, 'faces/pipe.jpg'));
    mkfifo(join(rig.dir, 'faces/pipe-without-extension'));
    mkdirSync(join(rig.dir, 'faces/dana'));
    mkfifo(join(rig.dir, 'faces/dana/1.jpg'));
    await listenOn(join(rig.dir, 'faces/sock.png'));
    // mknod needs root (CAP_MKNOD): the device node is part of the case where the tests run as root.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) execFileSync('mknod', [join(rig.dir, 'faces/null.jpg'), 'c', '1', '3']);
    mkdirSync(join(rig.dir, 'voiceprints/folder.wav'));
    mkdirSync(join(rig.dir, 'voiceprints/folder'));
    await put(rig.dir, 'voiceprints/folder/inside.wav', wav(1));
    // A speaker whose text "file" is a FIFO: reading it would wait for a writer forever.
    await put(rig.dir, 'speakers/talk.wav', wav(1));
    mkfifo(join(rig.dir, 'speakers/talk.txt'));
    // Five FIFOs more than the thread pool has threads: one blocking open each would stall every
    // file operation of the process, and the regular face below would never be uploaded.
    for (let i = 0; i < 5; i++) mkfifo(join(rig.dir, `faces/jam${i}.jpg`));
    await put(rig.dir, 'faces/ok.jpg', jpeg());

    const expected: [string, RegExp][] = [
      ['failed/faces/pipe.error.json', /pipe\.jpg is a FIFO \(named pipe\), not a regular file/],
      ['failed/faces/pipe-without-extension.error.json', /FIFO/],
      ['failed/faces/dana/1.error.json', /FIFO/],
      ['failed/faces/sock.error.json', /is a socket/],
      ...(asRoot ? [['failed/faces/null.error.json', /is a character device/] as [string, RegExp]] : []),
      ['failed/speakers/talk.error.json', /talk\.txt is a FIFO/],
      ...[0, 1, 2, 3, 4].map((i) => [`failed/faces/jam${i}.error.json`, /FIFO/] as [string, RegExp]),
    ];
    // Each original is moved beside its reason as its batch finishes, so every move is waited for,
    // not only the reasons. `folder` and `folder.wav` share the stem `folder`, and finish in
    // either order: the second is renamed (`folder-2` or `folder.2.wav`) and has its own reason.
    const moved = ['failed/faces/pipe.jpg', 'failed/faces/sock.png', 'failed/speakers/talk.txt'];
    const folders = () => {
      const first = existsSync(join(rig.dir, 'failed/voiceprints/folder.wav')) ? 'folder.wav' : 'folder';
      const second = first === 'folder' ? 'folder.2.wav' : 'folder-2';
      return { first, second, reasons: ['folder.error.json', first === 'folder' ? 'folder.2.error.json' : 'folder-2.error.json'] };
    };
    const missing = () => {
      const { first, second, reasons } = folders();
      return ['done/faces/ok.json', ...expected.map(([f]) => f), ...moved, ...[first, second, ...reasons].map((f) => `failed/voiceprints/${f}`)]
        .filter((f) => !existsSync(join(rig.dir, f)));
    };
    await waitFor('every reason, every move and the good face', () => missing().length === 0, 15_000)
      .catch((err: Error) => { throw new Error(`${err.message}; still missing: ${missing().join(', ')}`); });
    const { first, second, reasons } = folders();
    const told = reasons.map((f) => readJson(join(rig.dir, 'failed/voiceprints', f)));
    expect(told.map((r) => r.file)).toEqual([first, second]);
    expect(told.map((r) => r.error)).toEqual([
      expect.stringMatching(new RegExp(`voiceprints/${first} is a directory`)), expect.stringMatching(new RegExp(`voiceprints/${first === 'folder' ? 'folder\\.wav' : 'folder'} is a directory`))]);
    const withInside = first === 'folder' ? first : second;
    expect(existsSync(join(rig.dir, 'failed/voiceprints', withInside, 'inside.wav'))).toBe(true);
    expect(statSync(join(rig.dir, 'failed/voiceprints', withInside === first ? second : first)).isDirectory()).toBe(true);
    for (const [f, says] of expected) {
      expect(readJson(join(rig.dir, f)), f).toMatchObject({ code: 'TA_ERR_NOT_A_FILE', error: expect.stringMatching(says) });
    }
    // Moved beside their reasons (a rename: nothing was opened), the inboxes are empty.
    expect(lstatSync(join(rig.dir, 'failed/faces/pipe.jpg')).isFIFO()).toBe(true);
    expect(lstatSync(join(rig.dir, 'failed/faces/sock.png')).isSocket()).toBe(true);
    if (asRoot) expect(lstatSync(join(rig.dir, 'failed/faces/null.jpg')).isCharacterDevice()).toBe(true);
    expect(lstatSync(join(rig.dir, 'failed/speakers/talk.txt')).isFIFO()).toBe(true);
    expect(listFiles(join(rig.dir, 'faces'))).toEqual([]);

    // Reported once: two more rescans (1 s apart here) add no failure.
    const failedBefore = rig.enrollment.status().kinds.faces.failed;
    await new Promise((r) => setTimeout(r, 2500));
    expect(rig.enrollment.status().kinds.faces.failed).toBe(failedBefore);
    expect(rig.emulator.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  }, 30_000);

  it('openRegularFile and readHead return at once on a FIFO nobody writes to', async () => {
    const dir = tmpDir('ta-fifo-');
    const fifo = join(dir, 'f.jpg');
    mkfifo(fifo);
    const started = Date.now();
    await expect(openRegularFile(fifo)).rejects.toBeInstanceOf(NotRegularFileError);
    await expect(readHead(fifo, 16)).rejects.toThrow(/is a FIFO \(named pipe\), not a regular file/);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('hard links and replaced files', () => {
  it('two names for one inode are refused, unread: a hard link could pass off a file the operator cannot read as one they dropped', async () => {
    const rig = await startRig();
    const image = jpeg();
    const src = await put(rig.dir, 'faces/erin.jpg', image);
    linkSync(src, join(rig.dir, 'faces/frank.jpg'));
    await waitFor('both refusals', () => existsSync(join(rig.dir, 'failed/faces/erin.error.json')) && existsSync(join(rig.dir, 'failed/faces/frank.error.json')));
    for (const n of ['erin', 'frank']) expect(readJson(join(rig.dir, `failed/faces/${n}.error.json`))).toMatchObject({ code: 'TA_ERR_HARD_LINK', error: expect.stringMatching(new RegExp(`^faces/${n}\\.jpg has 2 names \\(hard links\\)`)) });
    expect(rig.emulator.state.faces()).toEqual([]);
    expect(readFileSync(join(rig.dir, 'failed/faces/erin.jpg')).equals(image)).toBe(true);
  });

  it('a file replaced (same size and mtime, new inode) while it is uploaded: every original in done/ matches the sha256 of its result', async () => {
    const rig = await startRig({ emulator: { chaos: { latencyMs: 700 } } });
    const first = jpeg('a'.repeat(16));
    const second = jpeg('b'.repeat(16));
    expect(first.length).toBe(second.length);
    const path = await put(rig.dir, 'faces/gina.jpg', first);
    const mtime = statSync(path).mtime;
    await waitFor('the upload in flight', () => rig.emulator.requests.some((r) => r.method === 'POST' && r.status === 0), 10_000);
    // Replaced by rename, as editors and copy tools do, with the same size and mtime.
    const tmp = join(rig.dir, 'faces/.gina.jpg.new');
    writeFileSync(tmp, second);
    utimesSync(tmp, mtime, mtime);
    renameSync(tmp, path);
    await waitFor('both versions done', () => listFiles(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.json')).length === 2, 15_000);
    const done = listFiles(join(rig.dir, 'done/faces'));
    for (const original of done.filter((f) => f.endsWith('.jpg'))) {
      const result = readJson(join(rig.dir, 'done/faces', original.replace(/\.jpg$/, '.json')));
      expect(result.sha256, original).toBe(sha256(readFileSync(join(rig.dir, 'done/faces', original))));
    }
    // Both versions are kept: the first, replaced in the inbox, from the agent's staged copy.
    expect(done.filter((f) => f.endsWith('.jpg')).sort()).toEqual(['gina.2.jpg', 'gina.jpg']);
    const firstDone = done.filter((f) => f.endsWith('.jpg')).find((f) => readFileSync(join(rig.dir, 'done/faces', f)).equals(first));
    expect(firstDone).toBeDefined();
    // The face on the service ends with the second image, sent by its own upload.
    expect(rig.emulator.state.faceImage(rig.emulator.state.faces()[0]!.face_id)?.equals(second)).toBe(true);
  }, 30_000);

  it('a file removed from the inbox while it is uploaded still ends in done/, from the staged copy, with its result', async () => {
    const rig = await startRig({ emulator: { chaos: { latencyMs: 700 } } });
    const image = jpeg('removed while uploading');
    const path = await put(rig.dir, 'faces/hana.jpg', image);
    await waitFor('the upload in flight', () => rig.emulator.requests.some((r) => r.method === 'POST' && r.status === 0), 10_000);
    rmSync(path);
    await waitFor('done/faces/hana.json', () => existsSync(join(rig.dir, 'done/faces/hana.json')), 15_000);
    expect(readFileSync(join(rig.dir, 'done/faces/hana.jpg')).equals(image)).toBe(true);
    expect(readJson(join(rig.dir, 'done/faces/hana.json')).sha256).toBe(sha256(image));
    // Moved, not copied: the staging folder holds nothing once the row is finished.
    await waitFor('the staging folder empty', () => readdirSync(join(rig.config.state_dir, 'enroll-staging')).length === 0);
  }, 30_000);

  it('a file the service refuses, removed from the inbox meanwhile, ends in failed/ beside its error file', async () => {
    const rig = await startRig({ emulator: { faults: [{ method: 'POST', path: '/v1/api/faces', action: 'status', status: 400, delayMs: 700 }] } });
    const image = jpeg('refused and removed');
    const path = await put(rig.dir, 'faces/ivan.jpg', image);
    await waitFor('the upload in flight', () => rig.emulator.requests.some((r) => r.method === 'POST' && r.status === 0), 10_000);
    rmSync(path);
    await waitFor('failed/faces/ivan.error.json', () => existsSync(join(rig.dir, 'failed/faces/ivan.error.json')), 15_000);
    expect(readFileSync(join(rig.dir, 'failed/faces/ivan.jpg')).equals(image)).toBe(true);
  }, 30_000);
});
