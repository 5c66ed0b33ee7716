import { dirname, resolve } from 'node:path';
import { scanPlainValue } from './plain-scan.js';
import { readConfigFileSync, readPlainConfigSync } from './read-config-file.js';

// state_dir of a config file, read without the YAML library or the schema (zod), for
// `faces list --cached`: it reads the local cache and must cost little more than a bare node.
// Only a plain config (plain-scan.ts) whose top-level keys are all known and whose state_dir, if
// set, is a non-empty plain string is read this way; anything else gives undefined and the
// caller loads the config in full, so a misspelt section or an odd value is reported as before.
// Problems in the other sections are not looked at here: `config check` is there for them (as
// for `status`, which asks the daemon whatever the file now holds).

export const DEFAULT_STATE_DIR = '/var/lib/terminal-agent';

/** The config's top-level keys (schema.ts rootShape; test/config/state-dir.test.ts keeps them equal). */
export const TOP_LEVEL_KEYS: readonly string[] = [
  'service', 'state_dir', 'state_min_free', 'faces', 'enroll', 'tts', 'audio', 'voiceprint',
  'speaker_training', 'control', 'console', 'log', 'metrics',
];

/** state_dir of a plain config's text (not yet resolved), or undefined: load the config in full. */
export function scanStateDir(text: string): string | undefined {
  const scan = scanPlainValue(text, ['state_dir'], { topKeys: TOP_LEVEL_KEYS });
  if (scan === 'absent') return DEFAULT_STATE_DIR;
  return scan?.value ? scan.value : undefined; // null and '' are the schema's to report
}

/**
 * The absolute state_dir named by the config file, or undefined when the file is not plain. A
 * file that cannot be read throws the same ConfigError as the full load.
 */
export function stateDirOf(configPath: string, cwd: string): string | undefined {
  const file = resolve(cwd, configPath);
  // The quick read, else the full reader, which throws the full load's ConfigError.
  const stateDir = scanStateDir(readPlainConfigSync(file) ?? readConfigFileSync(file));
  // Resolved as load-config.ts does: relative to the config file's folder.
  return stateDir === undefined ? undefined : resolve(dirname(file), stateDir);
}
