import { describe, expect, it, onTestFinished } from 'vitest';
import { chmodSync, chownSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/database.js';
import { createVoiceprintRegistry } from '../../src/voiceprint/registry.js';
import { createSpeakerRegistry } from '../../src/enroll/speaker-registry.js';
import { cliEntryFor, runCliProcess, type CliRunOptions } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

// `voiceprint list`, `speaker list` (and `faces list --cached`) as an operator who may only read agent.db: the Debian
// package makes state_dir 0750 and the agent's UMask=0027 its files 0640, owner and group
// terminal-agent. As root (these tests' usual case) the CLI runs as nobody (from a copy nobody can
// read when the checkout is closed to it, as under /root), with the files' group set to nobody's; as any other user, the user's own write permissions are taken away, which
// leaves SQLite the same situation: the file and its folder readable, neither writable.

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

interface Terminal {
  state: string;
  configPath: string;
  /** The way the CLI runs as a reader of agent.db. */
  reader: CliRunOptions;
  /** Makes state_dir and everything in it readable but not writable by the reader. */
  readOnly(): void;
}

function terminal(): Terminal {
  const dir = tmpDir('ta-lists-');
  const state = join(dir, 'state');
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, ['service:', '  base_url: http://127.0.0.1:9', '  face_base_url: http://127.0.0.1:9/v1/api', `state_dir: ${state}`, ''].join('\n'));
  chmodSync(dir, 0o755);
  chmodSync(configPath, 0o644);
  const readOnly = () => {
    const entries = readdirSync(state).map((f) => join(state, f));
    for (const p of [state, ...entries]) {
      if (asRoot) chownSync(p, 0, NOBODY);
      chmodSync(p, p === state ? (asRoot ? 0o750 : 0o550) : (asRoot ? 0o640 : 0o440));
    }
    // Writable again at the end, so that the temp folder can be removed.
    onTestFinished(() => {
      chmodSync(state, 0o700);
      for (const f of readdirSync(state)) chmodSync(join(state, f), 0o600);
    });
  };
  return { state, configPath, reader: asRoot ? { uid: NOBODY, gid: NOBODY, command: [process.execPath, cliEntryFor(NOBODY, NOBODY)] } : {}, readOnly };
}

/** agent.db with one voiceprint and one speaker, as the daemon leaves it; the connection stays open when asked. */
function agentDb(state: string): Db {
  const db = openDatabase({ path: join(state, 'agent.db') });
  createVoiceprintRegistry(db).add({ voiceprintId: 'vp_1', name: 'ana', source: 'enroll', info: {}, seconds: 4 });
  createSpeakerRegistry(db).put({ speaker_id: 'spk_1', model: 'tts-turbo', label: 'bea', status: 1 });
  return db;
}

const list = (t: Terminal, what: 'voiceprint' | 'speaker', ...json: ['--json'] | []) => runCliProcess([what, 'list', ...json, '--config', t.configPath], t.reader);

describe('voiceprint list and speaker list read agent.db read-only', () => {
  it('work for a reader who may not write agent.db or state_dir, beside a running daemon and with none', async () => {
    const t = terminal();
    const daemon = agentDb(t.state); // a running daemon: agent.db-wal and agent.db-shm exist
    t.readOnly();
    for (const pass of ['daemon running', 'daemon stopped']) {
      const voiceprints = await list(t, 'voiceprint', '--json');
      expect(voiceprints.stderr, pass).toBe('');
      expect(JSON.parse(voiceprints.stdout), pass).toEqual([expect.objectContaining({ voiceprint_id: 'vp_1', name: 'ana', source: 'enroll' })]);
      const speakers = await list(t, 'speaker', '--json');
      expect(speakers.stderr, pass).toBe('');
      expect(JSON.parse(speakers.stdout), pass).toEqual([expect.objectContaining({ speaker_id: 'spk_1', label: 'bea', status_text: 'ready' })]);
      // `faces list --cached` too (this terminal has no faces: the read is what is tested).
      const faces = await runCliProcess(['faces', 'list', '--cached', '--json', '--config', t.configPath], t.reader);
      expect(faces.stderr, pass).toBe('');
      expect(JSON.parse(faces.stdout), pass).toEqual([]);
      daemon.close();
    }
  });

  it('say what is wrong, where, and how to fix it when agent.db cannot be read or does not exist yet', async () => {
    const t = terminal();
    for (const what of ['voiceprint', 'speaker'] as const) {
      const missing = await list(t, what);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe('');
      expect(missing.stderr).toBe(`terminal-agent: no agent.db at ${join(t.state, 'agent.db')} yet: the agent creates it when it first starts (systemctl start terminal-agent); if it runs, check that state_dir in the configuration is the daemon's [TA_ERR_FAILURE]\n`);
    }
    agentDb(t.state).close();
    t.readOnly();
    chmodSync(join(t.state, 'agent.db'), asRoot ? 0o600 : 0o200);
    for (const what of ['voiceprint', 'speaker'] as const) {
      const refused = await list(t, what);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(`terminal-agent: cannot read ${join(t.state, 'agent.db')}: permission denied; run the command as a member of the agent's group (sudo adduser $USER terminal-agent, then log in again) or with sudo; \`ls -l\` shows who may read it [TA_ERR_FAILURE]\n`);
    }
  });
});
