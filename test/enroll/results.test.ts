import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLayout } from '../../src/enroll/layout.js';
import { createPlacer } from '../../src/enroll/results.js';
import { tmpDir } from '../helpers/tmp.js';

describe('where a finished original goes (createPlacer)', () => {
  it('an original without an extension whose result name is taken gets NAME-2, not a loop over NAME.k (which all read as NAME)', () => {
    const dir = tmpDir();
    const layout = createLayout(join(dir, 'enroll'), join(dir, 'state'));
    // voiceprints/folder.wav went first: failed/voiceprints/folder.error.json is its reason.
    mkdirSync(layout.failed('voiceprints'), { recursive: true });
    writeFileSync(join(layout.failed('voiceprints'), 'folder.error.json'), '{}');
    const placer = createPlacer(layout);
    expect(placer.place({ kind: 'voiceprints', source_path: 'voiceprints/folder' }, true)).toBe('folder-2');
    expect(placer.place({ kind: 'voiceprints', source_path: 'voiceprints/folder' }, true)).toBe('folder-3');
    // With an extension the numbering is unchanged.
    expect(placer.place({ kind: 'voiceprints', source_path: 'voiceprints/folder.wav' }, true)).toBe('folder.2.wav');
  });

  it('two originals with one stem, placed before either result is written, get two result names; a name is free again once its files are there', () => {
    const dir = tmpDir();
    const layout = createLayout(join(dir, 'enroll'), join(dir, 'state'));
    const placer = createPlacer(layout);
    // Both would have had alice.json: the second result would have replaced the first.
    expect(placer.place({ kind: 'faces', source_path: 'faces/alice.jpg' }, false)).toBe('alice.jpg');
    expect(placer.place({ kind: 'faces', source_path: 'faces/alice.png' }, false)).toBe('alice.2.png');
    expect(placer.place({ kind: 'voiceprints', source_path: 'voiceprints/folder.wav' }, true)).toBe('folder.wav');
    expect(placer.place({ kind: 'voiceprints', source_path: 'voiceprints/folder' }, true)).toBe('folder-2');
    // alice.jpg moved and alice.json written: the reservation ends, the files on disk keep the names taken.
    const done = layout.done('faces');
    mkdirSync(done, { recursive: true });
    writeFileSync(join(done, 'alice.jpg'), 'x');
    writeFileSync(join(done, 'alice.json'), '{}');
    placer.release(join(done, 'alice.jpg'));
    expect(placer.place({ kind: 'faces', source_path: 'faces/alice.gif' }, false)).toBe('alice.3.gif');
    // A placement released without its files on disk (they were removed) frees the name.
    placer.release(join(done, 'alice.2.png'));
    expect(placer.place({ kind: 'faces', source_path: 'faces/alice.png' }, false)).toBe('alice.2.png');
    // Targets recorded before a restart hold their result names as well.
    const again = createPlacer(layout);
    again.reserve({ kind: 'faces', state: 'done', final_path: 'bob.jpg' });
    expect(again.place({ kind: 'faces', source_path: 'faces/bob.png' }, false)).toBe('bob.2.png');
  });
});
