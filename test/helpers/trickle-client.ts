import { connect, type Socket } from 'node:net';

// A client that sends its request slowly and keeps sending while the server answers: what a slow
// or broken HTTP client does. Real sockets, unix or TCP.

export type Where = string | { port: number; host: string };

/**
 * Connects to `where` (a unix socket path, or a TCP port and host) and writes `bytes`, `chunk` at
 * a time every `everyMs`, until the server ends the connection; resolves with what it read and
 * how long it took.
 */
export function trickle(where: Where, bytes: string, everyMs = 1, chunk = 1): Promise<{ got: string; ms: number }> {
  const t0 = Date.now();
  const s: Socket = connect(typeof where === 'string' ? { path: where } : where);
  let got = '';
  let i = 0;
  s.on('data', (d: Buffer) => { got += d.toString(); });
  s.on('error', () => {});
  const timer = setInterval(() => {
    if (!s.destroyed && i < bytes.length) s.write(bytes.slice(i, i += chunk));
  }, everyMs);
  return new Promise((resolve) => s.on('close', () => {
    clearInterval(timer);
    resolve({ got, ms: Date.now() - t0 });
  }));
}
