import { describe, expect, test } from 'vitest';
import { planUploads } from '../../web/src/pages/upload.js';

// Where the Enrollment page puts dropped files (web/src/pages/upload.ts), on real File objects.

const file = (name: string) => new File([Buffer.from('x')], name);
const plan = (names: string[], forced?: Parameters<typeof planUploads>[1]) => planUploads(names.map(file), forced).map((p) => [p.file.name, p.kind ?? p.problem]);

describe('planUploads', () => {
  test('by file type: pictures to faces, sounds to voiceprints, texts to knowledge, any case', () => {
    expect(plan(['Ada.JPG', 'b.webp', 'alice.wav', 'raw.pcm', 'faq.md', 'notes.txt'])).toEqual([
      ['Ada.JPG', 'faces'], ['b.webp', 'faces'], ['alice.wav', 'voiceprints'], ['raw.pcm', 'voiceprints'], ['faq.md', 'knowledge'], ['notes.txt', 'knowledge'],
    ]);
  });

  test('a sound with a text of the same name is a speaker sample, the transcript first', () => {
    expect(plan(['Narrator.wav', 'Narrator.txt', 'other.txt'])).toEqual([['Narrator.txt', 'speakers'], ['other.txt', 'knowledge'], ['Narrator.wav', 'speakers']]);
  });

  test('a file with no folder is refused with what each folder takes', () => {
    const [[name, problem]] = plan(['report.pdf']) as [[string, string]];
    expect(name).toBe('report.pdf');
    expect(problem).toMatch(/\.pdf file has no enrollment folder; pictures go to faces\//);
    expect(plan(['Makefile'])[0]![1]).toMatch(/\.\(none\) file/);
  });

  test('a chosen folder takes only its own types', () => {
    expect(plan(['a.wav', 'a.txt', 'b.png'], 'speakers')).toEqual([['a.txt', 'speakers'], ['b.png', 'speakers/ takes .wav .txt files'], ['a.wav', 'speakers']]);
    expect(plan(['x.md'], 'faces')[0]![1]).toBe('faces/ takes .jpg .jpeg .png .bmp .webp files');
  });
});
