import { TLSSocket } from 'node:tls';
import { buildConnector } from 'undici';

// TLS sessions resumed across connections to the same host: a resumed handshake skips the key
// exchange and the certificate check, the dearest part of a new connection on a Pi. undici's
// connector keeps a session cache of its own, but holds each session weakly (a WeakRef): a garbage
// collection between two connections, which are minutes apart in a daemon, loses it, and no
// connection was resumed. So the latest session of each host is held here and given to undici's
// connector (its `session` option) for the next connection to that host.

/** A connector (undici's `connect` option) that resumes each host's latest TLS session. */
export function resumingConnector(options: buildConnector.BuildOptions): buildConnector.connector {
  const sessions = new Map<string, Buffer>();
  return (opts, callback) => {
    const host = `${opts.hostname}:${opts.port}`;
    const connect = buildConnector({ ...options, session: sessions.get(host), maxCachedSessions: 0 });
    connect(opts, (err, socket) => {
      if (err) {
        callback(err, null);
        return;
      }
      if (socket instanceof TLSSocket) {
        // TLS 1.2's session is complete with the handshake; TLS 1.3's tickets come after it.
        const session = socket.getProtocol() === 'TLSv1.3' ? undefined : socket.getSession();
        if (session) sessions.set(host, session);
        socket.on('session', (ticket: Buffer) => sessions.set(host, ticket));
      }
      callback(null, socket);
    });
  };
}
