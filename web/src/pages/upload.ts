// Which enrollment folder a dropped file belongs in, from its name: pictures are faces, sounds are
// voiceprints, text is knowledge, and a sound dropped together with a text of the same name is a
// speaker sample with its transcript. The operator can also pick the folder.

export const KINDS = ['faces', 'voiceprints', 'speakers', 'knowledge'] as const;
export type Kind = (typeof KINDS)[number];

const EXT: Record<string, Kind> = {
  jpg: 'faces', jpeg: 'faces', png: 'faces', bmp: 'faces', webp: 'faces',
  wav: 'voiceprints', pcm: 'voiceprints',
  txt: 'knowledge', md: 'knowledge',
};

export const ACCEPT: Record<Kind, string> = {
  faces: '.jpg,.jpeg,.png,.bmp,.webp',
  voiceprints: '.wav,.pcm',
  speakers: '.wav,.txt',
  knowledge: '.txt,.md',
};

function split(name: string): [string, string] {
  const i = name.lastIndexOf('.');
  return i > 0 ? [name.slice(0, i), name.slice(i + 1).toLowerCase()] : [name, ''];
}

export interface Planned {
  file: File;
  kind: Kind | undefined;
  /** Why the file cannot be placed, when `kind` is undefined. */
  problem?: string;
}

/** Plans where each file goes; `forced` is the folder the operator picked, if any. */
export function planUploads(files: readonly File[], forced: Kind | undefined): Planned[] {
  const bases = new Map<string, Set<string>>();
  for (const f of files) {
    const [base, ext] = split(f.name);
    if (!bases.has(base)) bases.set(base, new Set());
    bases.get(base)!.add(ext);
  }
  const planned = files.map((file): Planned => {
    const [base, ext] = split(file.name);
    if (forced) {
      const ok = ACCEPT[forced].split(',').includes(`.${ext}`);
      return ok ? { file, kind: forced } : { file, kind: undefined, problem: `${forced}/ takes ${ACCEPT[forced].replace(/,/g, ' ')} files` };
    }
    const exts = bases.get(base)!;
    if ((ext === 'wav' || ext === 'txt') && exts.has('wav') && exts.has('txt')) return { file, kind: 'speakers' };
    const kind = EXT[ext];
    return kind ? { file, kind } : { file, kind: undefined, problem: `a .${ext || '(none)'} file has no enrollment folder; pictures go to faces/, .wav to voiceprints/, .txt/.md to knowledge/` };
  });
  // A speaker's transcript must be there before its sound, or the sample would wait for it.
  return planned.sort((a, b) => Number(a.kind === 'speakers' && a.file.name.endsWith('.wav')) - Number(b.kind === 'speakers' && b.file.name.endsWith('.wav')));
}
