import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

// A CONNECT proxy (what HTTPS_PROXY points at) for the client's tests: it tunnels each CONNECT to
// where `route` says (by default the host and port asked for) and notes what was asked. No proxy
// runs on the test machine otherwise.

export interface ConnectProxy {
  port: number;
  url: string;
  /** Each CONNECT's `host:port`, in order. */
  connects: string[];
  close(): void;
}

export async function startConnectProxy(
  route: (host: string, port: number) => { host: string; port: number } = (host, port) => ({ host, port }),
): Promise<ConnectProxy> {
  const connects: string[] = [];
  const proxy = createServer((_req, res) => res.writeHead(405).end());
  proxy.on('connect', (req, socket, head) => {
    connects.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const target = route(host!, Number(port));
    const upstream = connect(target.port, target.host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const port = (proxy.address() as AddressInfo).port;
  return {
    port, url: `http://127.0.0.1:${port}`, connects,
    close: () => {
      proxy.close();
      proxy.closeAllConnections();
    },
  };
}
