import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ENTRY, cliEntryFor } from '../helpers/cli.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { needRoot, tmpDirManual } from '../helpers/tmp.js';
import { jpeg, sha256 } from '../enroll/fixtures.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from './daemon-harness.js';

// enroll.dir is a security boundary (issue 71): the operators who drop files are members of its
// group, neither the daemon's user nor root. Here the daemon runs as `nobody` with that group,
// and every move of the operator is made as another user of the group (setpriv, numeric ids: no
// passwd entry is needed), against files only the daemon can read: the terminal secret and a
// private folder. Each case ends with nothing outside enroll.dir read, sent, moved or written,
// and the daemon serving.
//
// The race runs TA_OPERATOR_RACE_S seconds (default 10 here; packaging/check-operator.sh runs 60).
// TA_OLD_ENTRY=/path/to/an/older/dist/main.js runs the same cases against another build (before
// issue 71 the swapped folder, the swapped done/ and the hard link all fail), and
// TA_OPERATOR_NODE="/path/to/node --flag ..." runs the daemon on another node (check-operator.sh
// --deb: the package's own node and tree, with the unit's node flags).

const DAEMON_UID = 65534;
const GROUP = 64170;
const OPERATOR = 64171;
const RACE_S = Number(process.env.TA_OPERATOR_RACE_S ?? 10);
// The checkout's build, or a copy nobody can read when the clone is not (under /root): set in beforeAll.
let ENTRY = process.env.TA_OLD_ENTRY ?? CLI_ENTRY;
const NODE = process.env.TA_OPERATOR_NODE?.split(' ').filter(Boolean) ?? [process.execPath];

/** A script run as the operator (a member of enroll.dir's group, nothing more). */
function asOperator(script: string, cwd: string): { status: number | null; stderr: string } {
  const r = spawnSync('setpriv', [`--reuid=${OPERATOR}`, `--regid=${GROUP}`, '--clear-groups', 'bash', '-c', script], { cwd, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

interface World {
  root: string;
  files: DaemonFiles;
  emulator: Emulator;
  daemon: DaemonProcess;
  /** A folder only the daemon's user may read, holding a face image and a text. */
  privateDir: string;
  privatePhoto: Buffer;
  privateText: string;
  /** Only the daemon's user may write here: nothing may appear in it. */
  privateOut: string;
  secret: string;
}

let w: World;
let cleanup: () => void = () => undefined;

function ownedByDaemon(path: string, mode: number, gid = DAEMON_UID): void {
  chownSync(path, DAEMON_UID, gid);
  chmodSync(path, mode);
}

beforeAll(async () => {
  needRoot('run the daemon as nobody and an operator as another member of enroll.dir\'s group');
  if (!process.env.TA_OLD_ENTRY) ENTRY = cliEntryFor(DAEMON_UID, DAEMON_UID);
  for (const f of [ENTRY, NODE[0]!]) {
    if (spawnSync('setpriv', [`--reuid=${DAEMON_UID}`, `--regid=${DAEMON_UID}`, '--clear-groups', 'test', '-r', f]).status !== 0) {
      throw new Error(`nobody cannot read ${f}: put it where other users may read it`);
    }
  }
  const tmp = tmpDirManual('ta-operator-');
  cleanup = tmp.remove;
  const root = tmp.dir;
  chmodSync(root, 0o755);
  const emulator = await startTestEmulator();
  const home = join(root, 'home');
  const files = daemonFiles(home, emulator);
  mkdirSync(files.stateDir);
  mkdirSync(files.enrollDir);
  for (const f of [home, files.stateDir]) ownedByDaemon(f, 0o755);
  for (const f of [files.secretPath, join(home, 'api_key')]) ownedByDaemon(f, 0o600);
  chmodSync(files.configPath, 0o644);
  // As the package makes it (postinst): the daemon's, group-writable and setgid for its group.
  ownedByDaemon(files.enrollDir, 0o2770, GROUP);

  const privateDir = join(root, 'private');
  mkdirSync(privateDir);
  const privatePhoto = jpeg('private');
  const privateText = `PRIVATE-${sha256(privatePhoto).slice(0, 16)}`;
  writeFileSync(join(privateDir, 'photo.jpg'), privatePhoto);
  writeFileSync(join(privateDir, 'notes.txt'), privateText);
  for (const f of readdirSync(privateDir)) ownedByDaemon(join(privateDir, f), 0o600);
  ownedByDaemon(privateDir, 0o700);
  const privateOut = join(root, 'private-out');
  mkdirSync(privateOut);
  ownedByDaemon(privateOut, 0o700);

  const daemon = spawnDaemon(files.configPath, {}, ['run'], home, ENTRY, ['setpriv', `--reuid=${DAEMON_UID}`, `--regid=${GROUP}`, '--clear-groups', '--'], NODE);
  await daemon.waitLog(isReady, 20_000, 'the ready line');
  w = { root, files, emulator, daemon, privateDir, privatePhoto, privateText, privateOut, secret: emulator.terminals[0]!.terminal_secret };
  // The daemon under test is the node and the tree asked for, native addons included (check-operator.sh
  // --deb: the package's, not this checkout's).
  const exe = readlinkSync(`/proc/${daemon.pid}/exe`);
  const addons = [...new Set(readFileSync(`/proc/${daemon.pid}/maps`, 'utf8').split('\n').map((l) => l.split(/\s+/)[5] ?? '').filter((f) => f.endsWith('.node')))];
  const tree = dirname(dirname(ENTRY));
  const trees = [realpathSync(tree), realpathSync(join(tree, 'node_modules'))];
  console.log(`operator tests: the daemon is ${exe} ${ENTRY}, version ${String(daemon.logs().find(isReady)?.version)}, addons loaded: ${addons.join(' ')}`);
  expect(exe).toBe(realpathSync(NODE[0]!));
  expect(addons.length).toBeGreaterThan(0);
  for (const a of addons) expect(trees.some((t) => a.startsWith(`${t}/`)), a).toBe(true);
}, 60_000);

afterAll(async () => {
  if (w) {
    w.daemon.signal('SIGTERM');
    await w.daemon.exited;
    await w.emulator.close();
  }
  cleanup();
});

const enroll = (rel = '') => join(w.files.enrollDir, ...(rel ? rel.split('/') : []));

async function waitFor<T>(what: string, fn: () => T | undefined | false, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${w.daemon.stdout().slice(-3000)}`);
    await sleep(50);
  }
}

/** What every case ends with: nothing of the private files reached the service or moved, nothing written outside, the daemon serving. */
async function nothingLeaked(): Promise<void> {
  const st = w.emulator.state;
  for (const k of st.knowledge()) {
    expect(k.content).not.toContain(w.secret);
    expect(k.content).not.toContain(w.privateText);
  }
  expect(st.faces().map((f) => sha256(st.faceImage(f.face_id) ?? Buffer.alloc(0)))).not.toContain(sha256(w.privatePhoto));
  expect(readFileSync(join(w.privateDir, 'photo.jpg')).equals(w.privatePhoto)).toBe(true);
  expect(readFileSync(join(w.privateDir, 'notes.txt'), 'utf8')).toBe(w.privateText);
  expect(readdirSync(w.privateDir).sort()).toEqual(['notes.txt', 'photo.jpg']);
  expect(readdirSync(w.privateOut)).toEqual([]);
  expect(readFileSync(w.files.secretPath, 'utf8').trim()).toBe(w.secret);
  expect(w.daemon.child.exitCode).toBeNull();
  expect((await controlRequest(w.files.socketPath, 'GET', '/status')).status).toBe(200);
}

const resultOf = (rel: string) => JSON.parse(readFileSync(enroll(rel), 'utf8')) as { code?: string; error?: string };

describe('an operator in enroll.dir\'s group cannot make the daemon read, send, move or write outside it', () => {
  it('the package\'s modes hold: the daemon\'s folders are sticky, so the operator can neither rename nor replace faces/, done/ or done/faces', () => {
    for (const rel of ['', 'done', 'failed']) expect((lstatSync(enroll(rel)).mode & 0o7777).toString(8), rel || '.').toBe('3770');
    for (const rel of ['faces', 'done/faces', 'failed/faces', 'knowledge']) expect((lstatSync(enroll(rel)).mode & 0o7777).toString(8), rel).toBe('2770');
    for (const rel of ['faces', 'done', 'done/faces', 'failed/knowledge']) {
      const r = asOperator(`mv ${rel} ${rel}.away`, enroll());
      expect(r.status, rel).not.toBe(0);
      expect(r.stderr, rel).toMatch(/Operation not permitted/);
    }
    // What they may do: drop, and clear results.
    expect(asOperator('echo hi > knowledge/mine.txt && mkdir faces/ok && rm knowledge/mine.txt && rmdir faces/ok', enroll()).status).toBe(0);
  });

  it(`the race: ${RACE_S} s of symbolic links flipped between a file of the inbox and the terminal secret (knowledge, a face, a face folder)`, async () => {
    const script = `
      set -u
      echo harmless text > knowledge/.bait.txt
      head -c 600 /dev/urandom > faces/.bait.jpg
      mkdir -p faces/.baitdir && head -c 600 /dev/urandom > faces/.baitdir/photo.jpg
      end=$((SECONDS + ${RACE_S}))
      while [ $SECONDS -lt $end ]; do
        ln -sfn "$PWD/knowledge/.bait.txt" knowledge/.l1 && mv -T knowledge/.l1 knowledge/race.txt
        ln -sfn "${w.files.secretPath}" knowledge/.l2 && mv -T knowledge/.l2 knowledge/race.txt
        ln -sfn "${w.privateDir}/notes.txt" knowledge/.l3 && mv -T knowledge/.l3 knowledge/race.md
        ln -sfn "$PWD/faces/.bait.jpg" faces/.l1 && mv -T faces/.l1 faces/race.jpg
        ln -sfn "${w.privateDir}/photo.jpg" faces/.l2 && mv -T faces/.l2 faces/race.jpg
        [ -e faces/.baitdir/photo.jpg ] || head -c 600 /dev/urandom > faces/.baitdir/photo.jpg
        mv -T faces/.baitdir faces/flip && mv -T faces/flip faces/.baitdir
        ln -s "${w.privateDir}" faces/flip && rm faces/flip
      done 2>/dev/null
      rm -rf knowledge/race.txt knowledge/race.md faces/race.jpg faces/flip
      exit 0
    `;
    const child = spawn('setpriv', [`--reuid=${OPERATOR}`, `--regid=${GROUP}`, '--clear-groups', 'bash', '-c', script], { cwd: enroll(), stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    // The daemon saw the links: refusals came out of the race.
    expect(readdirSync(enroll('failed/faces')).some((n) => n.startsWith('race'))).toBe(true);
    // Whatever the daemon made of the links, it is settled a rescan later.
    await sleep(3000);
    await nothingLeaked();
    const refused = readdirSync(enroll('failed/knowledge')).filter((n) => n.startsWith('race'));
    for (const n of refused) expect(['TA_ERR_SYMLINK', 'TA_ERR_EMPTY_TEXT']).toContain(resultOf(`failed/knowledge/${n}`).code);
  }, (RACE_S + 60) * 1000);

  it('a face folder swapped for a link to a private folder: the file behind it stays, unread and unsent; the reason is given', async () => {
    // Made and swapped at once, well inside settle_time: the daemon first sees the operator's folder.
    const r = asOperator(`mkdir faces/carol && head -c 700 /dev/urandom > faces/carol/photo.jpg && mv faces/carol faces/.carol-away && ln -s ${w.privateDir} faces/carol`, enroll());
    expect(r.status, r.stderr).toBe(0);
    // Refused either as a file whose folder is a link (the daemon saw the file first) or as the
    // link itself (a rescan found faces/carol a link): each says why; the link is never followed.
    const [where, error] = await waitFor('carol refused', () => {
      for (const f of ['failed/faces/carol/photo.error.json', 'failed/faces/carol.error.json']) if (existsSync(enroll(f))) return [f, resultOf(f)] as const;
      return undefined;
    });
    expect(error.code).toBe('TA_ERR_SYMLINK');
    expect(error.error).toMatch(where === 'failed/faces/carol.error.json' ? /^faces\/carol is a symbolic link; the agent follows no link/ : /enroll\.dir\/faces\/carol is a symbolic link \(to .*private\)/);
    // Refused as the link itself: the link moved, untouched (still a link, to where it pointed).
    if (where === 'failed/faces/carol.error.json') expect(lstatSync(enroll('failed/faces/carol')).isSymbolicLink()).toBe(true);
    else expect(existsSync(enroll('failed/faces/carol/photo.jpg'))).toBe(false);
    expect(existsSync(enroll('done/faces/carol'))).toBe(false);
    await nothingLeaked();
    asOperator('rm -rf faces/carol faces/.carol-away failed/faces/carol', enroll());
  }, 30_000);

  it('done/faces and failed/faces swapped for links (an install without the sticky bit): nothing is written behind them, the reason is logged, and results arrive once the folders are back', async () => {
    for (const rel of ['done', 'failed']) chmodSync(enroll(rel), 0o2770); // as before issue 71
    const r = asOperator(`mv done/faces done/.faces-away && ln -s ${w.privateOut} done/faces && mv failed/faces failed/.faces-away && ln -s ${w.privateOut} failed/faces`, enroll());
    expect(r.status, r.stderr).toBe(0);
    const photo = jpeg('dave');
    writeFileSync(join(w.root, 'dave.jpg'), photo);
    expect(asOperator(`: > faces/empty.jpg && cat ${join(w.root, 'dave.jpg')} > faces/dave.jpg`, enroll()).status).toBe(0);
    const refusedLine = await waitFor('the log line', () => w.daemon.logs().find((l) => /an enrollment folder was replaced/.test(l.msg)), 20_000);
    expect(refusedLine).toMatchObject({ level: 'warn', code: 'TA_ERR_ENROLL_LINK', path: expect.stringMatching(/^(done|failed)\/faces$/), err: expect.stringMatching(/^enroll\.dir\/(done|failed)\/faces is a symbolic link \(to .*private-out\)/) });
    await waitFor('dave uploaded', () => w.emulator.state.faces().some((f) => f.name === 'dave'));
    await sleep(2500); // a rescan: it retries, and refuses again
    expect(readdirSync(w.privateOut)).toEqual([]);
    expect(existsSync(enroll('faces/dave.jpg'))).toBe(true);
    await nothingLeaked();

    // The operator (or an administrator) puts the folders back: the results follow.
    expect(asOperator('rm done/faces failed/faces && mv done/.faces-away done/faces && mv failed/.faces-away failed/faces', enroll()).status).toBe(0);
    await waitFor('dave done', () => existsSync(enroll('done/faces/dave.json')), 20_000);
    await waitFor('empty refused', () => existsSync(enroll('failed/faces/empty.error.json')), 20_000);
    expect(readFileSync(enroll('done/faces/dave.jpg')).equals(photo)).toBe(true);
    for (const rel of ['done', 'failed']) chmodSync(enroll(rel), 0o3770);
    await nothingLeaked();
  }, 60_000);

  it('a hard link to a file the operator cannot read is refused unread (made by root: fs.protected_hardlinks stops the operator already)', async () => {
    const denied = asOperator(`ln ${join(w.privateDir, 'photo.jpg')} faces/hl.jpg`, enroll());
    expect(denied.status).not.toBe(0);
    linkSync(join(w.privateDir, 'photo.jpg'), enroll('faces/hl.jpg'));
    const error = await waitFor('hl refused', () => existsSync(enroll('failed/faces/hl.error.json')) && resultOf('failed/faces/hl.error.json'));
    expect(error).toMatchObject({ code: 'TA_ERR_HARD_LINK', error: expect.stringMatching(/^faces\/hl\.jpg has 2 names \(hard links\)/) });
    // The name moved inside enroll.dir; the file itself is where it was, still unreadable to the operator.
    expect(asOperator('cat failed/faces/hl.jpg > /dev/null', enroll()).status).not.toBe(0);
    rmSync(enroll('failed/faces/hl.jpg'));
    await nothingLeaked();
  }, 30_000);

  it('a folder dropped where a file is expected is refused with its reason and moved aside, its content untouched', async () => {
    // (In faces/ a folder is a person's folder; in voiceprints/ only files belong.) umask 002: a
    // folder moves to another parent only when its mover may write it (its `..` changes).
    expect(asOperator('umask 002 && mkdir voiceprints/eve.wav && echo x > voiceprints/eve.wav/inside.txt', enroll()).status).toBe(0);
    const error = await waitFor('eve refused', () => existsSync(enroll('failed/voiceprints/eve.error.json')) && resultOf('failed/voiceprints/eve.error.json'));
    expect(error).toMatchObject({ code: 'TA_ERR_NOT_A_FILE', error: expect.stringMatching(/^voiceprints\/eve\.wav is a directory, not a regular file/) });
    expect(readFileSync(enroll('failed/voiceprints/eve.wav/inside.txt'), 'utf8')).toBe('x\n');
    await nothingLeaked();
  }, 30_000);
});
