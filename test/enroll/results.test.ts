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
});
