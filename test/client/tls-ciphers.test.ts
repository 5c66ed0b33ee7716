import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { DEFAULT_CIPHERS } from 'node:tls';
import { chachaFirst, ciphersFor, cpuHasAes } from '../../src/client/tls-ciphers.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { silentLogger } from '../../src/log/logger.js';
import { makeTestConfig } from '../helpers/config.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { makeLocalhostCert } from '../helpers/tls-cert.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';

// The cipher the client offers first on a CPU without AES instructions (a Raspberry Pi 4). The
// servers are real TLS endpoints on loopback with a self-signed certificate. Most pick by the
// client's order (nginx by default, Go's crypto/tls when the client puts ChaCha20 first), so they
// are set to (node's own https server picks by its order unless told otherwise); one keeps its own
// order, to show what the client cannot change. Only the CPU cannot be had here: the tests say
// which kind the client runs on (cpuHasAes), and the /proc/cpuinfo texts are those of the machines named.

// Trimmed to the lines that matter; the flag lists are the machines' own.
const X86 = 'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor\n';
const PI4 = 'processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n'
  + 'processor\t: 1\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU part\t: 0xd08\n';
const PI5 = 'processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU part\t: 0xd0b\n';
const OLD_X86 = 'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt\n';

describe('cpuHasAes', () => {
  it('reads the aes flag of x86 and ARM CPUs', () => {
    expect(cpuHasAes(X86)).toBe(true);
    expect(cpuHasAes(PI5)).toBe(true);
    expect(cpuHasAes(PI4)).toBe(false);
    expect(cpuHasAes(OLD_X86)).toBe(false);
  });

  it('keeps node\'s order when it cannot tell', () => {
    expect(cpuHasAes(undefined)).toBe(true);
    expect(cpuHasAes('')).toBe(true);
    expect(cpuHasAes('processor\t: 0\nmodel name\t: something\n')).toBe(true);
    // aes inside another flag's name is not the flag
    expect(cpuHasAes('flags\t\t: fpu vaes_like sse2\n')).toBe(false);
  });
});

describe('chachaFirst', () => {
  it('puts ChaCha20-Poly1305 first and keeps node\'s set of ciphers', () => {
    const list = chachaFirst().split(':');
    expect(list.slice(0, 3)).toEqual(['TLS_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305']);
    const rest = list.slice(3);
    expect(rest).toEqual(DEFAULT_CIPHERS.split(':').filter((c) => c !== '' && c !== 'TLS_CHACHA20_POLY1305_SHA256'));
    expect(ciphersFor(true)).toBeUndefined();
    expect(ciphersFor(false)).toBe(chachaFirst());
  });
});

let tmp: { dir: string; remove(): void };
let certPath: string;
let keyPath: string;
const servers: Server[] = [];
const proxies: ConnectProxy[] = [];

/** An https endpoint answering GET /v1/api/faces with [] and noting each request's cipher. */
async function endpoint(tls: { maxVersion?: 'TLSv1.2'; ciphers?: string; honorCipherOrder?: boolean } = {}): Promise<{ base: string; ciphers: string[] }> {
  const ciphers: string[] = [];
  const server = createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath), honorCipherOrder: false, ...tls }, (req, res) => {
    ciphers.push((req.socket as TLSSocket).getCipher().name);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return { base: `https://localhost:${(server.address() as AddressInfo).port}/v1/api`, ciphers };
}

function clientOf(base: string, cpuHasAesInstructions: boolean, env: Record<string, string> = {}) {
  const config = makeTestConfig({
    service: { base_url: base, face_base_url: base, terminal_secret: 'ts_test', ca_file: certPath, retries: 0, request_timeout: 5_000 },
  }).service;
  return createServiceClient({ config, logger: silentLogger(), userAgent: 'test', cpuHasAes: cpuHasAesInstructions, env });
}

beforeAll(() => {
  tmp = tmpDirManual('ta-tls-ciphers-');
  ({ certPath, keyPath } = makeLocalhostCert(tmp.dir));
});

afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  for (const p of proxies) p.close();
  tmp?.remove();
});

/** The cipher `server` saw for one listing by a client on a CPU with or without AES instructions. */
async function negotiated(server: { base: string; ciphers: string[] }, aes: boolean, env: Record<string, string> = {}): Promise<string | undefined> {
  const client = clientOf(server.base, aes, env);
  await expect(client.listFaces()).resolves.toEqual([]);
  await client.close();
  return server.ciphers.at(-1);
}

describe('the cipher a TLS server is offered first', () => {
  it('TLS 1.3: ChaCha20-Poly1305 on a CPU without AES instructions, node\'s AES-GCM on one with them', async () => {
    const server = await endpoint();
    expect(await negotiated(server, false)).toBe('TLS_CHACHA20_POLY1305_SHA256');
    expect(await negotiated(server, true)).toBe('TLS_AES_256_GCM_SHA384');
  });

  it('TLS 1.2 only: ECDHE-RSA-CHACHA20-POLY1305 without AES instructions, AES-GCM with them', async () => {
    const server = await endpoint({ maxVersion: 'TLSv1.2' });
    expect(await negotiated(server, false)).toBe('ECDHE-RSA-CHACHA20-POLY1305');
    expect(await negotiated(server, true)).toBe('ECDHE-RSA-AES128-GCM-SHA256');
  });

  it('through HTTPS_PROXY too (the tunnel\'s TLS is the client\'s own)', async () => {
    const server = await endpoint();
    const proxy = await startConnectProxy();
    proxies.push(proxy);
    expect(await negotiated(server, false, { HTTPS_PROXY: proxy.url })).toBe('TLS_CHACHA20_POLY1305_SHA256');
    expect(await negotiated(server, true, { HTTPS_PROXY: proxy.url })).toBe('TLS_AES_256_GCM_SHA384');
    expect(proxy.connects).toHaveLength(2);
  });

  it('a server that keeps its own order gets AES-GCM either way', async () => {
    const server = await endpoint({ honorCipherOrder: true });
    expect(await negotiated(server, false)).toBe('TLS_AES_256_GCM_SHA384');
    expect(await negotiated(server, true)).toBe('TLS_AES_256_GCM_SHA384');
  });

  it('a server without ChaCha20 still gets the AES-GCM it allows', async () => {
    const server = await endpoint({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' });
    expect(await negotiated(server, false)).toBe('ECDHE-RSA-AES256-GCM-SHA384');
  });
});
