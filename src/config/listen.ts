import { isIP } from 'node:net';
import { isLoopbackHost } from './schema-fields.js';

// A TCP listen address as an operator writes it: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080`,
// `:8080` (every address) or `8080` alone (loopback). Host names other than localhost are refused:
// what a name resolves to can change after the check that decided whether a login is needed.

export interface ListenAddress {
  host: string;
  port: number;
  /** True when only this machine can connect. */
  loopback: boolean;
}

export function parseListen(raw: string): ListenAddress | string {
  const s = raw.trim();
  let host: string;
  let portText: string;
  const bracket = /^\[([^\]]+)\]:(\d+)$/.exec(s);
  if (/^\d+$/.test(s)) {
    host = '127.0.0.1';
    portText = s;
  } else if (bracket) {
    host = bracket[1]!;
    portText = bracket[2]!;
  } else {
    const colon = s.lastIndexOf(':');
    if (colon < 0) return `"${s}" has no port: write HOST:PORT, e.g. 127.0.0.1:8080`;
    host = s.slice(0, colon) || '0.0.0.0';
    portText = s.slice(colon + 1);
    if (host.includes(':')) return `"${s}": put an IPv6 address in brackets, e.g. [::1]:8080`;
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) return `"${s}" has no valid port: use 1 to 65535 (0 picks a free one), e.g. 127.0.0.1:8080`;
  if (host === 'localhost') host = '127.0.0.1';
  if (isIP(host) === 0) return `"${host}" is not an IP address: write an address such as 127.0.0.1, 0.0.0.0 or [::1] (a host name could resolve elsewhere later)`;
  return { host, port, loopback: isLoopbackHost(host) };
}
