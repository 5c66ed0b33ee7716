import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { PasswordHash } from './password-hash-format.js';

// Console passwords are kept only as scrypt hashes, in the PHC string format that other tools
// read too: `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (ln = log2 of N; salt and hash in base64 without
// padding). scrypt is in node:crypto, so no native module is needed; N = 2^15, r = 8 takes 32 MB
// and about 0.1 s on a desktop core, 0.5 s on a Pi 3: slow enough against guessing, and logins are
// rare and rate-limited.

export { parsePasswordHash, type PasswordHash } from './password-hash-format.js';

const DEFAULT = { ln: 15, r: 8, p: 1 };
const HASH_BYTES = 32;

function derive(password: string, h: Omit<PasswordHash, 'hash'>, bytes: number): Promise<Buffer> {
  const N = 2 ** h.ln;
  const opts: ScryptOptions = { N, r: h.r, p: h.p, maxmem: 128 * N * h.r * h.p + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), h.salt, bytes, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

export async function hashPassword(password: string, params: { ln: number; r: number; p: number } = DEFAULT): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, { ...params, salt }, HASH_BYTES);
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${b64(salt)}$${b64(hash)}`;
}

export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const got = await derive(password, stored, stored.hash.length);
  return got.length === stored.hash.length && timingSafeEqual(got, stored.hash);
}
