// The PHC string of a console password hash (password-hash.ts), read without node:crypto: the
// config schema checks console.password_hash on every `config check`, `run` and reload, and
// node:crypto costs a command about 3 ms to load.

export interface PasswordHash {
  ln: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{11,})\$([A-Za-z0-9+/]{22,})$/;

export function parsePasswordHash(text: string): PasswordHash | undefined {
  const m = PHC.exec(text.trim());
  if (!m) return undefined;
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (ln < 10 || ln > 20 || r < 1 || r > 32 || p < 1 || p > 16) return undefined;
  return { ln, r, p, salt: Buffer.from(m[4]!, 'base64'), hash: Buffer.from(m[5]!, 'base64') };
}
