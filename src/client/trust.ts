import { createSecureContext, type SecureContext } from 'node:tls';

// Whom the agent trusts over TLS: the CAs node trusts, plus service.ca_file's when it is set.
// The package's node (and a checkout's dist/main.js) runs with --use-openssl-ca, so "the CAs node
// trusts" are the system's (/etc/ssl/certs, Debian's ca-certificates and what an operator adds
// with update-ca-certificates), looked up by OpenSSL when a chain needs them. Without the flag
// (`node dist/main.js`) they are node's own list of public CAs.
//
// Not tls.createSecureContext({ ca }): `ca` replaces the roots rather than adding to them, and the
// only roots JS can name on Node 20 are node's own list (tls.rootCertificates), never the system's;
// passing those also parsed 144 certificates into a store of their own (about 1 MB of RSS, kept as
// long as the context). Adding the file to a context made without `ca` gives that context a store
// of the default roots (the system's, read lazily, under the flag) with the file's certificates in
// it: the same call the `ssl-root-cas` and `win-ca` packages have made on every Node since 7.

/** What a transport's TLS connections use beyond node's defaults: the same for both transports. */
export interface TlsOptions {
  /** PEM text of service.ca_file: trusted besides node's roots. */
  extraCa?: string;
  /** The cipher list to offer (tls-ciphers.ts). */
  ciphers?: string;
}

/** The native half of a SecureContext: undocumented, stable since Node 0.x. */
interface NativeContext {
  addCACert(pem: string): void;
}

/** One context for every connection of a client: node's roots, the extra CA, the cipher order. */
export function secureContextFor(tls: TlsOptions | undefined): SecureContext {
  const context = createSecureContext(tls?.ciphers ? { ciphers: tls.ciphers } : undefined);
  if (tls?.extraCa) (context as SecureContext & { context: NativeContext }).context.addCACert(tls.extraCa);
  return context;
}
