import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { companionRel, createLayout, joinUnder, toRel } from '../../src/enroll/layout.js';
import { resultFileFor, resultPathFor } from '../../src/enroll/result-files.js';
import { KINDS } from '../../src/enroll/types.js';

// layout.abs skips path.join for the paths the agent makes (a burst calls it several times per
// file); whatever it is given, it must name the same file path.join would.
describe('enrollment layout', () => {
  const dirs = ['/srv/enroll', '/srv/enroll/', '/srv/./x/../enroll', '/', 'enroll', './enroll', '.', 'a//b'];
  const rels = [
    'faces/alice.jpg', 'faces/alice/1.jpg', 'faces/.hidden.jpg', 'faces/..a.jpg', 'faces/a..', 'knowledge/x.md',
    'faces/../../etc/passwd', '../outside.jpg', '..', '.', '', '/abs.jpg', 'faces//a.jpg', 'faces/./a.jpg', 'faces/', './faces/a.jpg',
    'faces/a/.', 'faces/a/..', 'faces/ä ö.jpg', 'faces/a\\b.jpg',
  ];

  it('resolves every relative path exactly as path.join does, odd ones included', () => {
    for (const dir of dirs) {
      const layout = createLayout(dir, '/var/lib/terminal-agent');
      for (const rel of rels) expect(layout.abs(rel), `${dir} + ${rel}`).toBe(join(dir, ...rel.split('/')));
    }
  });

  it('joins under any folder path.join made as path.join would', () => {
    for (const dir of dirs) {
      const base = join(dir);
      for (const rel of rels) expect(joinUnder(base, rel), `${base} + ${rel}`).toBe(join(base, ...rel.split('/')));
      // The watcher's way back (toRel) shares the folder's prefix with it.
      for (const rel of ['faces/alice.jpg', 'faces/alice/1.jpg', 'knowledge/x.md']) expect(toRel(base, joinUnder(base, rel))).toBe(rel);
    }
  });

  it('puts a result file beside its original in done/ and failed/', () => {
    const layout = createLayout('/srv/enroll', '/var/lib/terminal-agent');
    for (const rel of ['alice.jpg', 'alice/1.jpg', 'a/b/c.png', '..x.jpg', 'x/../y.jpg']) {
      const cut = rel.lastIndexOf('/') + 1;
      for (const state of ['done', 'failed'] as const) {
        expect(resultPathFor(layout, 'faces', state, rel)).toBe(join('/srv/enroll', state, 'faces', rel.slice(0, cut), resultFileFor('faces', state, rel.slice(cut))));
      }
    }
    expect(resultPathFor(layout, 'knowledge', 'done', 'faq')).toBe('/srv/enroll/done/knowledge/faq.json');
  });

  it('names the inbox, done and failed folders of every kind under enroll.dir', () => {
    const layout = createLayout('/srv/enroll/', '/var/lib/terminal-agent');
    for (const kind of KINDS) {
      expect(layout.inbox(kind)).toBe(`/srv/enroll/${kind}`);
      expect(layout.done(kind)).toBe(`/srv/enroll/done/${kind}`);
      expect(layout.failed(kind)).toBe(`/srv/enroll/failed/${kind}`);
      expect(layout.finished(kind, 'done')).toBe(layout.done(kind));
      expect(layout.finished(kind, 'failed')).toBe(layout.failed(kind));
      expect(layout.placed(kind, 'failed', 'alice/1.jpg')).toBe(`/srv/enroll/failed/${kind}/alice/1.jpg`);
      expect(layout.placed(kind, 'done', 'x/../y.jpg')).toBe(`/srv/enroll/done/${kind}/y.jpg`);
    }
    expect(layout.staging).toBe('/var/lib/terminal-agent/enroll-staging');
  });

  it("puts a speaker sample's text beside its WAV under the WAV's placed stem", () => {
    expect(companionRel('alice.wav')).toBe('alice.txt');
    expect(companionRel('alice.2.wav')).toBe('alice.2.txt');
    expect(companionRel('team/alice.wav')).toBe('team/alice.txt');
    expect(companionRel('noext')).toBe('noext.txt');
  });
});
