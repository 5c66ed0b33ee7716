// Types of tls-front.mjs, for the tests that use it (test/cli/doctor.test.ts).
export interface TlsFront {
  caFile: string;
  url(httpUrl: string): string;
  ciphers: Record<string, number>;
  handshakes: { full: number; resumed: number };
  close(): Promise<void>;
}
export function startTlsFront(targetBaseUrl: string, dir: string): Promise<TlsFront | { error: string }>;
