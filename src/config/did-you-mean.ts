// Suggestions for misspelt or misplaced config keys.
import { KNOWN_KEYS } from './schema.js';
import { nearest } from '../util/nearest-word.js';

export { editDistance, nearest } from '../util/nearest-word.js';

/** The message for an unknown key `key` in section `section` ('' = top level). */
export function unknownKeyMessage(section: string, key: string): string {
  const here = KNOWN_KEYS[section] ?? [];
  const typo = nearest(key, here);
  if (typo) return `unknown key '${key}': did you mean '${typo}'?`;
  // A valid key in the wrong section (e.g. sync_interval under enroll:, base_url at the top).
  for (const [other, keys] of Object.entries(KNOWN_KEYS)) {
    if (other !== section && keys.includes(key)) {
      return `unknown key '${key}' here: it belongs ${other ? `under ${other}:` : 'at the top level'}; move it there`;
    }
  }
  for (const [other, keys] of Object.entries(KNOWN_KEYS)) {
    const near = other !== section ? nearest(key, keys) : undefined;
    if (near) return `unknown key '${key}': did you mean '${other ? `${other}.` : ''}${near}' (under ${other || 'the top level'})?`;
  }
  return `unknown key '${key}': remove it; known keys here are ${here.join(', ')}`;
}
