// An HTTPS front for the emulator, which speaks plain HTTP: in the field the daemon talks to the
// cloud over TLS, and TLS costs memory the emulator alone never shows (OpenSSL's code in node's
// binary, its root store, each connection's state). A private CA is made with openssl for
// localhost; every request is passed on to the emulator as it came, and its answer back. It picks
// the cipher by the client's order, as nginx does by default (node's own server keeps its order).
//   const front = await startTlsFront(emulator.baseUrl, dir); front.url(emulator.faceBaseUrl) ...
// Returns { caFile, url(httpUrl), ciphers, handshakes, close() } (ciphers: requests per negotiated
// cipher; handshakes: { full, resumed } TLS sessions), or { error } when openssl is missing or fails.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:https';
import { join } from 'node:path';

export async function startTlsFront(targetBaseUrl, dir) {
  const caFile = join(dir, 'tls-front-cert.pem');
  const keyFile = join(dir, 'tls-front-key.pem');
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', caFile, '-days', '2',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  } catch (err) {
    return { error: `openssl could not make a certificate (${err.code ?? err.message})` };
  }
  const target = new URL(targetBaseUrl);
  const ciphers = {};
  const server = createServer({ key: readFileSync(keyFile), cert: readFileSync(caFile), honorCipherOrder: false }, (req, res) => {
    const cipher = req.socket.getCipher().name;
    ciphers[cipher] = (ciphers[cipher] ?? 0) + 1;
    const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  // A client that does not resume its sessions pays a whole handshake (a certificate to verify)
  // on every new connection: the benchmarks print how many of each the agent made.
  const handshakes = { full: 0, resumed: 0 };
  server.on('secureConnection', (socket) => { handshakes[socket.isSessionReused() ? 'resumed' : 'full'] += 1; });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://localhost:${server.address().port}`;
  return {
    caFile,
    /** The same URL through the front: `http://127.0.0.1:P/v1/api` becomes `https://localhost:Q/v1/api`. */
    url: (httpUrl) => httpUrl.replace(/^http:\/\/[^/]+/, origin),
    ciphers,
    handshakes,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}
