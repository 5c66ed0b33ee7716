import { readdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { auditDir } from './register.js';
import type { VoiceprintRegistry } from './registry.js';

// Every WAV sent to /voiceprint is kept under state_dir/voiceprints/ with its result JSON (about
// 256 KB for the default 8 s, up to 1.9 MB for 60 s). Terminals run unattended for years, so the
// folder is bounded here, at start and after each registration:
// - the audit of a voiceprint still in the local registry is kept (it is the evidence of what that
//   voiceprint was made from);
// - the others (attempts the service refused or never answered, deleted or replaced voiceprints,
//   a WAV a crash left without its JSON) are kept while among the newest 20, or younger than
//   7 days up to 200 of them: enough to look into a recent problem;
// - above 512 MB in all, the oldest go first (unregistered ones, then registered ones, whose
//   registry row then stops naming the files: `voiceprint list` never points at a missing file);
// - nothing younger than 15 minutes is touched: a registration in flight (here or in a CLI
//   process beside the daemon) writes its WAV before the registry row exists.
// Fixed values rather than config keys: the contract's `voiceprint:` section names what is
// recorded, not housekeeping, and nobody tunes a terminal they installed and forgot.

export interface AuditRetentionLimits {
  keepNewest: number;
  keepYoungerMs: number;
  maxUnregistered: number;
  hardCapBytes: number;
  graceMs: number;
  /** Hidden temp files of an atomic write interrupted by a crash. */
  tempMaxAgeMs: number;
}

const DAY = 24 * 3600_000;

export const AUDIT_RETENTION: Readonly<AuditRetentionLimits> = {
  keepNewest: 20,
  keepYoungerMs: 7 * DAY,
  maxUnregistered: 200,
  hardCapBytes: 512 * 1024 * 1024,
  graceMs: 15 * 60_000,
  tempMaxAgeMs: 3600_000,
};

export interface AuditPruneReport {
  /** Audits (a WAV or PCM and its JSON count as one) left in the folder. */
  kept: number;
  deleted: number;
  /** Of the deleted: audits of voiceprints still registered (only above the hard cap). */
  deletedRegistered: number;
  bytesFreed: number;
  /** Bytes left in the folder. */
  bytes: number;
}

export interface AuditPruneDeps {
  stateDir: string;
  registry: Pick<VoiceprintRegistry, 'auditRefs' | 'forgetAudit'>;
  logger?: Logger | undefined;
  now?: number;
  limits?: Partial<AuditRetentionLimits>;
}

interface Audit {
  stem: string;
  files: string[];
  bytes: number;
  mtimeMs: number;
  rowIds: number[];
}

const AUDIT_FILE = /^(.+)\.(wav|pcm|json)$/;

function stemOf(path: string): string {
  return basename(path).replace(/\.(wav|pcm|json)$/, '');
}

export async function pruneVoiceprintAudits(deps: AuditPruneDeps): Promise<AuditPruneReport> {
  const limits = { ...AUDIT_RETENTION, ...deps.limits };
  const now = deps.now ?? Date.now();
  const dir = auditDir(deps.stateDir);
  const report: AuditPruneReport = { kept: 0, deleted: 0, deletedRegistered: 0, bytesFreed: 0, bytes: 0 };
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return report;
    throw err;
  }

  const audits = new Map<string, Audit>();
  for (const name of names) {
    const path = join(dir, name);
    const st = await stat(path).catch(() => undefined);
    if (!st?.isFile()) continue;
    if (name.startsWith('.')) {
      if (name.endsWith('.tmp') && now - st.mtimeMs > limits.tempMaxAgeMs) await rm(path, { force: true });
      continue;
    }
    const m = AUDIT_FILE.exec(name);
    if (!m) continue; // not ours: left alone
    const stem = m[1]!;
    const a = audits.get(stem) ?? { stem, files: [], bytes: 0, mtimeMs: 0, rowIds: [] };
    a.files.push(path);
    a.bytes += st.size;
    a.mtimeMs = Math.max(a.mtimeMs, st.mtimeMs);
    audits.set(stem, a);
  }
  // By file name, not full path: rows keep the path they were written with, and state_dir may
  // have been given another spelling (or moved) since. The names carry a time stamp and random
  // bytes, so they do not collide.
  for (const ref of deps.registry.auditRefs()) {
    for (const p of [ref.audit_wav, ref.audit_json]) {
      const a = p ? audits.get(stemOf(p)) : undefined;
      if (a && !a.rowIds.includes(ref.id)) a.rowIds.push(ref.id);
    }
  }

  const newestFirst = (x: Audit, y: Audit) => y.mtimeMs - x.mtimeMs || (y.stem < x.stem ? -1 : y.stem > x.stem ? 1 : 0);
  const all = [...audits.values()].sort(newestFirst);
  const young = (a: Audit) => now - a.mtimeMs < limits.graceMs;
  const doomed = new Set<Audit>();
  let rank = 0;
  for (const a of all) {
    if (a.rowIds.length > 0 || young(a)) continue;
    const keep = rank < limits.keepNewest || (now - a.mtimeMs < limits.keepYoungerMs && rank < limits.maxUnregistered);
    rank++;
    if (!keep) doomed.add(a);
  }
  let total = all.reduce((n, a) => n + (doomed.has(a) ? 0 : a.bytes), 0);
  if (total > limits.hardCapBytes) {
    const oldestFirst = [...all].reverse().filter((a) => !doomed.has(a) && !young(a));
    for (const a of [...oldestFirst.filter((x) => x.rowIds.length === 0), ...oldestFirst.filter((x) => x.rowIds.length > 0)]) {
      if (total <= limits.hardCapBytes) break;
      doomed.add(a);
      total -= a.bytes;
    }
  }

  for (const a of all) {
    if (!doomed.has(a)) continue;
    // The row first: a crash between the two leaves a file nobody names, never a name with no file.
    for (const id of a.rowIds) deps.registry.forgetAudit(id);
    for (const f of a.files) await rm(f, { force: true });
    report.deleted++;
    report.bytesFreed += a.bytes;
    if (a.rowIds.length > 0) report.deletedRegistered++;
  }
  report.kept = all.length - report.deleted;
  report.bytes = total;
  if (report.deletedRegistered > 0) {
    deps.logger?.warn({ dir, deleted_registered: report.deletedRegistered, cap_bytes: limits.hardCapBytes },
      'voiceprint audit copies exceed their size cap: the oldest copies of registered voiceprints were deleted (the voiceprints stay registered)');
  }
  if (report.deleted > 0) deps.logger?.info({ dir, deleted: report.deleted, bytes_freed: report.bytesFreed, kept: report.kept, bytes: report.bytes }, 'old voiceprint audit copies deleted');
  return report;
}
