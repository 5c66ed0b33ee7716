import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (where package.json and dist/ live). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI_ENTRY = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface CliRunOptions {
  /** Environment of the child. Only what you pass plus PATH/HOME/ALSA_CONFIG_PATH from this process:
   * tests must not depend on the developer's TERMINAL_AGENT_* variables. */
  env?: Record<string, string | undefined>;
  /** Working directory of the child; default the repository root. */
  cwd?: string;
  /** Written to the child's stdin, then stdin is closed (closed at once when absent). */
  input?: string | Buffer;
  /** Kill the child (SIGKILL) after this long and reject; default 20s. */
  timeoutMs?: number;
  /** Run as this user/group (only when the tests run as root), e.g. to provoke EACCES. */
  uid?: number;
  gid?: number;
  /** What starts the CLI, before its arguments; default `node dist/main.js` (this node). E.g.
   * `[CLI_ENTRY]` to start it by its own #! line, or node with flags of its own. */
  command?: readonly string[];
}

export interface CliRunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Spawns `node dist/main.js ...args`, or `opts.command ...args` (build first: `npm run build`). */
export function runCliProcess(args: readonly string[], opts: CliRunOptions = {}): Promise<CliRunResult> {
  if (!existsSync(CLI_ENTRY)) {
    return Promise.reject(new Error(`${CLI_ENTRY} is missing: run 'npm run build' before the CLI tests`));
  }
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'ALSA_CONFIG_PATH', 'TMPDIR', 'LANG']) {
    const v = process.env[k]; // test code, not src/: reading the runner's env here is fine
    if (v !== undefined) base[k] = v;
  }
  const env: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const [cmd, ...cmdArgs] = opts.command ?? [process.execPath, CLI_ENTRY];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, [...cmdArgs, ...args], {
      cwd: opts.cwd ?? REPO_ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
      ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timeoutMs = opts.timeoutMs ?? 20_000;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`terminal-agent ${args.join(' ')} did not exit within ${timeoutMs}ms\nstdout: ${Buffer.concat(out).toString()}\nstderr: ${Buffer.concat(err).toString()}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on('error', () => {}); // the child may exit before reading its input
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

let readableCopy: string | undefined;

/**
 * dist/main.js as user `uid` may run it: the checkout's own when that user can read it, else a
 * copy of dist/ and of the production dependencies in a folder of the temp dir open to every
 * user. A clone under /root (mode 700) is closed to nobody, whom tests run the CLI as to provoke a
 * reader who may not write. The copy is made once per test file and removed at its end.
 */
export function cliEntryFor(uid: number, gid: number): string {
  if (spawnSync('test', ['-r', CLI_ENTRY], { uid, gid }).status === 0) return CLI_ENTRY;
  if (readableCopy) return readableCopy;
  const root = mkdtempSync(join(tmpdir(), 'ta-cli-copy-'));
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  chmodSync(root, 0o755);
  cpSync(join(REPO_ROOT, 'dist'), join(root, 'dist'), { recursive: true, verbatimSymlinks: true });
  cpSync(join(REPO_ROOT, 'package.json'), join(root, 'package.json'));
  for (const name of productionDependencies()) {
    cpSync(join(REPO_ROOT, 'node_modules', name), join(root, 'node_modules', name), { recursive: true, verbatimSymlinks: true });
  }
  readableCopy = join(root, 'dist', 'main.js');
  if (spawnSync('test', ['-r', readableCopy], { uid, gid }).status !== 0) throw new Error(`user ${uid} cannot read the copy of the CLI at ${readableCopy} either: is the temp dir (${tmpdir()}) open to other users?`);
  return readableCopy;
}

/** The packages the built CLI may load (package.json's dependencies and theirs, the optional ones present). */
function productionDependencies(): string[] {
  const seen = new Set<string>();
  const visit = (pkgJson: string) => {
    const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    for (const name of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
      const dir = join(REPO_ROOT, 'node_modules', name);
      if (seen.has(name) || !existsSync(join(dir, 'package.json'))) continue;
      seen.add(name);
      visit(join(dir, 'package.json'));
    }
  };
  visit(join(REPO_ROOT, 'package.json'));
  return [...seen];
}
