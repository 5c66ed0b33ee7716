import { escapeControls } from '../util/terminal-text.js';

// Names the service will store: face names, voiceprint names, speaker labels (and enrollment
// file names, which become those). A name must come back from the service exactly as sent, or
// the agent cannot find the face it created (POST /faces returns no id: spec-notes.md) and leaves
// an orphan on the service. What would not come back unchanged is refused before any request:
// - control characters (C0, DEL, C1): the multipart encoder turns LF and CR into CRLF (HTML form
//   rules), and the rest are terminal escapes or truncation points waiting to happen;
// - lone UTF-16 surrogates: FormData sends them as U+FFFD;
// - U+FFFD itself: what a file name that was not valid UTF-8 decodes to, so the name the
//   operator chose is already lost.
// Unicode normalization is not refused but settled: the agent always sends NFC (what macOS's
// NFD file names and a Windows keyboard's NFC both become) and compares service names in NFC,
// so "José" typed either way is one name. Case is kept and significant: the service holds the
// name as given, and "Alice" and "alice" are two names.

function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return true;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

/** The name as the agent sends and compares it. */
export function canonicalName(name: string): string {
  return name.normalize('NFC');
}

/** Shows a name with every control character and lone surrogate as an escape (\n, \x1b, \u{d800}). */
export function escapeName(name: string): string {
  return escapeControls(name);
}

/**
 * Why `name` cannot be sent as a name, or undefined when it can. `what` is the kind of name
 * ("face name"), used in the message.
 */
export function nameProblem(name: string, what: string): string | undefined {
  if (name.trim() === '') return `${what} is empty; give a name`;
  // Only for a message: escaping every name that is fine cost more than the checks.
  const shown = () => `"${escapeName(name)}"`;
  if (hasControl(name)) {
    return `${what} ${shown()} holds a control character (a line break, tab or terminal escape), which the service would not store as given; rename it without one`;
  }
  if (hasLoneSurrogate(name)) return `${what} ${shown()} is not valid Unicode (a lone surrogate); rename it`;
  if (name.includes('\ufffd')) {
    return `${what} ${shown()} holds U+FFFD, the mark of a name that was not valid UTF-8 (a file copied from a system with another character set); rename it in UTF-8`;
  }
  return undefined;
}
