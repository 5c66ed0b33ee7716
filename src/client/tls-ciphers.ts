import { readFileSync } from 'node:fs';
import { DEFAULT_CIPHERS } from 'node:tls';

// Which cipher the client asks for first. Node offers AES-GCM first, which is the cheapest choice
// on a CPU with AES instructions and among the dearest on one without: a Raspberry Pi 4's
// Cortex-A72 has none (Broadcom left the ARMv8 crypto extension out; a Pi 5 has it), and there
// OpenSSL's AES-GCM in plain code costs several times ChaCha20-Poly1305's per byte. Every
// enrollment upload is encrypted, so on such a CPU the client offers ChaCha20-Poly1305 first, as
// browsers on phones do. The set of ciphers is node's own either way, only the order changes: a
// server that picks by its own order, or has no ChaCha20, still gets what it would have picked.

/** The ChaCha20-Poly1305 suites: TLS 1.3's, then TLS 1.2's (already in node's list through HIGH). */
const CHACHA_FIRST = ['TLS_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305'];

/**
 * Whether /proc/cpuinfo's text shows AES instructions: the `aes` flag of x86's `flags` line or of
 * ARM's `Features` line. True when it cannot tell (no such line, no text): then node's order,
 * which is right for the CPUs that have them, stays.
 */
export function cpuHasAes(cpuinfo: string | undefined): boolean {
  const lines = (cpuinfo ?? '').split('\n').filter((l) => /^(flags|Features)\s*:/.test(l));
  if (lines.length === 0) return true;
  return lines.every((l) => / aes( |$)/.test(l.slice(l.indexOf(':') + 1).trimEnd()));
}

/** /proc/cpuinfo, or undefined where there is none (then cpuHasAes says true). */
export function readCpuinfo(): string | undefined {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return undefined;
  }
}

/** Node's cipher list with the ChaCha20-Poly1305 suites moved to the front of it. */
export function chachaFirst(defaults: string = DEFAULT_CIPHERS): string {
  const rest = defaults.split(':').filter((c) => c !== '' && !CHACHA_FIRST.includes(c));
  return [...CHACHA_FIRST, ...rest].join(':');
}

/** The `ciphers` option for a client on this CPU: undefined (node's own order) when it has AES instructions. */
export function ciphersFor(hasAes: boolean): string | undefined {
  return hasAes ? undefined : chachaFirst();
}
