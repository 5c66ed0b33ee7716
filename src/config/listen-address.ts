import { isLoopbackHost } from './plain-checks.js';
import { ipVersion } from '../util/ip-address.js';

// `host:port` for a TCP listener the agent opens on request (metrics.listen). A terminal sits on
// networks its operator does not control: loopback unless the config says otherwise, explicitly.

export interface ListenAddress {
  host: string;
  port: number;
}

const PATTERN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export function parseListenAddress(value: string): ListenAddress | undefined {
  const m = PATTERN.exec(value.trim());
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

export function isLoopbackListen(value: string): boolean {
  const a = parseListenAddress(value);
  return a !== undefined && isLoopbackHost(a.host);
}

/**
 * console.listen: host:port with an IP address (or localhost), never another host name: whether a
 * login is needed is decided from the address, and what a name resolves to can change later.
 */
export function parseConsoleListen(value: string): (ListenAddress & { loopback: boolean }) | string {
  const a = parseListenAddress(value);
  if (!a) return `${JSON.stringify(value)} is not host:port: use e.g. 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080 (port 0 takes a free one)`;
  const host = a.host === 'localhost' ? '127.0.0.1' : a.host;
  if (ipVersion(host) === 0) return `"${a.host}" is not an IP address: write 127.0.0.1, 0.0.0.0 (every interface) or an address of this machine (a host name could resolve elsewhere later)`;
  return { host, port: a.port, loopback: isLoopbackHost(host) };
}
