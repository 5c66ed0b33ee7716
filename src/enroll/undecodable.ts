import { existsSync } from 'node:fs';
import { readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { writeFileAtomic } from '../util/fs-atomic.js';
import type { Layout } from './layout.js';
import { createConfinedDirs, type DirRef } from './confined-dirs.js';
import { fitName, resultFileFor } from './result-files.js';
import type { ErrorFile } from './results.js';
import type { Kind } from './types.js';

// File names that are not valid UTF-8 (copied from a system with another character set: a
// Latin-1 "é" is the single byte 0xE9). Node decodes them to U+FFFD, a name that opens nothing,
// so the outbox can neither take nor move them by name. Here they are found by their bytes and
// moved to failed/<kind>/ under a name that says which bytes were not UTF-8 (%E9), with the
// reason beside it. The name the operator chose is already lost to the service; nothing is sent.

const WHAT: Record<Kind, string> = { faces: 'face name', voiceprints: 'voiceprint name', speakers: 'speaker label', knowledge: 'knowledge ID' };

/** `caf\xE9.jpg` as `caf%E9.jpg`: bytes outside ASCII and `%` itself, in hex. Always valid UTF-8. */
export function escapeNameBytes(name: Buffer): string {
  let out = '';
  for (const b of name) out += b >= 0x20 && b < 0x7f && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

function placeFor(dir: string, kind: Kind, escaped: string): string {
  const dot = escaped.lastIndexOf('.');
  const stem = dot <= 0 ? escaped : escaped.slice(0, dot);
  const ext = dot <= 0 ? '' : escaped.slice(dot);
  for (let k = 1; ; k++) {
    const placed = fitName(k === 1 ? stem : `${stem}.${k}`, ext, escaped);
    if (!existsSync(join(dir, placed)) && !existsSync(join(dir, resultFileFor(kind, 'failed', placed)))) return placed;
  }
}

/**
 * Moves every entry of `relDir` (an inbox, or a person folder under faces/) whose name does not
 * decode as UTF-8 to failed/; returns how many.
 */
export async function quarantineUndecodable(layout: Layout, relDir: string, logger: Logger): Promise<number> {
  const [kind, person] = relDir.split('/') as [Kind, string | undefined];
  const failedRel = person === undefined ? `failed/${kind}` : `failed/${kind}/${person}`;
  // Both folders held open, no link on the way followed (confined-dirs.ts); rare: through the pool.
  const dirs = createConfinedDirs(layout.root, () => false);
  const source = await dirs.open(relDir).catch(() => undefined);
  if (!source) return 0;
  let target: DirRef | undefined;
  try {
    return await quarantineFrom(source.path, relDir, kind, async () => (target ??= await dirs.open(failedRel, true)).path, logger);
  } finally {
    await dirs.close(source).catch(() => undefined);
    if (target) await dirs.close(target).catch(() => undefined);
  }
}

async function quarantineFrom(from: string, relDir: string, kind: Kind, failedFolder: () => Promise<string>, logger: Logger): Promise<number> {
  let moved = 0;
  for (const raw of await readdir(Buffer.from(from), { encoding: 'buffer' }).catch(() => [] as Buffer[])) {
    // A valid name that merely holds U+FFFD is refused by the claim like any other bad name.
    if (raw[0] === 0x2e || Buffer.from(raw.toString('utf8'), 'utf8').equals(raw)) continue;
    const failedDir = await failedFolder();
    const escaped = escapeNameBytes(raw);
    const placed = placeFor(failedDir, kind, escaped);
    try {
      await rename(Buffer.concat([Buffer.from(`${from}/`), raw]), join(failedDir, placed));
    } catch (err) {
      logger.warn({ err, dir: relDir, name: escaped }, 'cannot move a file whose name is not UTF-8 to failed/');
      continue;
    }
    const error: ErrorFile = {
      file: placed,
      error: `the name of ${relDir}/${escaped} is not valid UTF-8 (the bytes shown as %XX), so it cannot become a ${WHAT[kind]}; it was moved here as ${placed}: rename it in UTF-8 and drop it again`,
      code: 'TA_ERR_BAD_NAME', status: null, attempts: 0, at: new Date().toISOString(),
    };
    await writeFileAtomic(join(failedDir, resultFileFor(kind, 'failed', placed)), `${JSON.stringify(error, null, 2)}\n`);
    logger.warn({ kind, file: `${relDir}/${escaped}`, code: error.code }, 'enrollment file refused: its name is not UTF-8');
    moved++;
  }
  return moved;
}
