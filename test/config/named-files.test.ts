// The files a config names (service.ca_file, console.tls_cert_file / tls_key_file), read as the
// daemon reads them at start: real files, certificates made with openssl.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, type AgentConfig } from '../../src/config/schema.js';
import { namedFileProblems } from '../../src/config/named-files.js';
import { makeLocalhostCert } from '../helpers/tls-cert.js';
import { tmpDir } from '../helpers/tmp.js';

const URLS = { base_url: 'https://api.example.com', face_base_url: 'https://api.example.com/v1/api' };

function configWith(dir: string, service: Record<string, unknown>, consoleKeys: Record<string, unknown> = {}): AgentConfig {
  return { ...configSchema.parse({ service: { ...URLS, ...service }, state_dir: dir, console: consoleKeys }), file: join(dir, 'config.yaml') };
}

describe('files named by the config', () => {
  it('a config naming none has no problems; a readable CA and a matching certificate and key have none', async () => {
    const dir = tmpDir('ta-named-');
    const { certPath, keyPath } = makeLocalhostCert(dir);
    expect(await namedFileProblems(configWith(dir, {}))).toEqual([]);
    expect(await namedFileProblems(configWith(dir, { ca_file: certPath }, { tls_cert_file: certPath, tls_key_file: keyPath }))).toEqual([]);
  });

  it('a ca_file that is missing or holds no certificate is a problem of service.ca_file, in the config file', async () => {
    const dir = tmpDir('ta-named-');
    const { keyPath } = makeLocalhostCert(dir);
    const missing = join(dir, 'missing.pem');
    expect(await namedFileProblems(configWith(dir, { ca_file: missing }))).toEqual([
      { path: 'service.ca_file', file: join(dir, 'config.yaml'), message: `cannot read ${missing} (ENOENT); give a readable PEM file or ""` },
    ]);
    // A private key is PEM, but no certificate.
    expect(await namedFileProblems(configWith(dir, { ca_file: keyPath }))).toEqual([
      { path: 'service.ca_file', file: join(dir, 'config.yaml'), message: `${keyPath} holds no PEM certificate (-----BEGIN CERTIFICATE-----)` },
    ]);
  });

  it('the console\'s key missing, or the key of another certificate, is a problem naming the file and the key', async () => {
    const dir = tmpDir('ta-named-');
    const mine = makeLocalhostCert(dir);
    const other = makeLocalhostCert(tmpDir('ta-named-other-'));
    const missing = join(dir, 'nokey.pem');
    expect(await namedFileProblems(configWith(dir, {}, { tls_cert_file: mine.certPath, tls_key_file: missing }))).toEqual([
      { path: 'console.tls_key_file', file: missing, message: "cannot be read (ENOENT): check the path and that the agent's user may read it" },
    ]);
    const [mismatch, ...rest] = await namedFileProblems(configWith(dir, {}, { tls_cert_file: mine.certPath, tls_key_file: other.keyPath }));
    expect(rest).toEqual([]);
    expect(mismatch).toMatchObject({ path: 'console.tls_cert_file', file: mine.certPath, message: expect.stringMatching(/^the certificate or key is not usable: .*(key values mismatch|KEY_VALUES_MISMATCH)/i) });
  });

  it('reports every file at once: a bad CA and a console certificate that is not PEM', async () => {
    const dir = tmpDir('ta-named-');
    const { keyPath } = makeLocalhostCert(dir);
    const notPem = join(dir, 'cert.der');
    writeFileSync(notPem, Buffer.from([0x30, 0x82, 0x01, 0x0a]));
    const problems = await namedFileProblems(configWith(dir, { ca_file: join(dir, 'none.pem') }, { tls_cert_file: notPem, tls_key_file: keyPath }));
    expect(problems.map((p) => p.path)).toEqual(['service.ca_file', 'console.tls_cert_file']);
    expect(problems[1]!.message).toMatch(/^the certificate or key is not usable: /);
  });
});
