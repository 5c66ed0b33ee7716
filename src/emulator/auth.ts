import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { httpError } from './http.js';
import type { OtherAuth, RequestRecord, TerminalCredential } from './types.js';

// Bearer credentials: face calls carry a terminal secret (which selects the group), knowledge calls
// the API key. Messages name the credential, never echo what was sent.

export interface Auth {
  /** The group of the terminal whose secret the request carries; 401 otherwise. */
  faceGroup(req: IncomingMessage): string;
  requireApiKey(req: IncomingMessage): void;
  /** For notify/tts/train/voiceprint: nothing unless the emulator was told to demand a credential. */
  requireOther(req: IncomingMessage): void;
  /** Which known credential a request carries, for the request log. */
  classify(req: IncomingMessage): RequestRecord['auth'];
}

export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function createAuth(terminals: readonly TerminalCredential[], apiKey: string, other: OtherAuth): Auth {
  const groupOf = (token: string | undefined) => (token === undefined ? undefined : terminals.find((t) => same(t.terminal_secret, token))?.group_id);
  const bearerHelp = (what: string) => `send 'Authorization: Bearer <${what}>'`;

  const auth: Auth = {
    faceGroup(req) {
      const token = bearerToken(req);
      if (token === undefined) throw httpError(401, `missing terminal secret: ${bearerHelp('terminal_secret')}`, { 'WWW-Authenticate': 'Bearer' });
      const group = groupOf(token);
      if (group === undefined) throw httpError(401, 'terminal secret not recognised', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
      return group;
    },
    requireApiKey(req) {
      const token = bearerToken(req);
      if (token === undefined) throw httpError(401, `missing API key: ${bearerHelp('API_KEY')}`, { 'WWW-Authenticate': 'Bearer' });
      if (!same(token, apiKey)) throw httpError(401, 'API key not recognised', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    },
    requireOther(req) {
      if (other === 'terminal_secret') auth.faceGroup(req);
      else if (other === 'api_key') auth.requireApiKey(req);
    },
    classify(req) {
      const token = bearerToken(req);
      if (req.headers.authorization === undefined) return 'none';
      if (token !== undefined && groupOf(token) !== undefined) return 'terminal_secret';
      if (token !== undefined && same(token, apiKey)) return 'api_key';
      return 'unknown';
    },
  };
  return auth;
}
