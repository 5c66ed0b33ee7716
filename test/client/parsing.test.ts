import { describe, expect, it } from 'vitest';
import { parseRetryAfter, serverMessageOf, errorForStatus } from '../../src/client/error-mapping.js';
import { sniffMediaType } from '../../src/client/media-types.js';
import { isLoopbackHost } from '../../src/config/plain-checks.js';
import { AuthError, BadRequestError, ServerError } from '../../src/errors.js';
import { PNG_BYTES, JPEG_BYTES, wavHeader } from './fixtures.js';

// The pure pieces behind the client: Retry-After forms, server messages, sniffing.

describe('Retry-After', () => {
  it('takes delta-seconds and HTTP dates; ignores garbage', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('server messages', () => {
  it('takes message, return_message, detail or error from JSON, a first line from text, and scrubs secrets', () => {
    expect(serverMessageOf('{"return_code":400,"return_message":"image missing"}', [])).toBe('image missing');
    expect(serverMessageOf('{"detail":"bad id"}', [])).toBe('bad id');
    expect(serverMessageOf('{"error":"nope"}', [])).toBe('nope');
    expect(serverMessageOf('Service Unavailable\nmore', [])).toBe('Service Unavailable');
    expect(serverMessageOf('<html><body>502</body></html>', [])).toBeUndefined();
    expect(serverMessageOf('{"message":"token s3cr3t-value rejected"}', ['s3cr3t-value'])).toBe('token [REDACTED] rejected');
  });

  it('maps statuses to the typed errors and exit codes', () => {
    const ctx = { operation: 'GET /faces', credential: 'service.terminal_secret' as const, secrets: [] };
    expect(errorForStatus(ctx, 401, undefined)).toBeInstanceOf(AuthError);
    expect(errorForStatus(ctx, 400, 'x')).toMatchObject({ exitCode: 65, status: 400, serverMessage: 'x' });
    expect(errorForStatus(ctx, 422, undefined)).toBeInstanceOf(BadRequestError);
    expect(errorForStatus(ctx, 429, undefined, 2000)).toMatchObject({ retryable: true, retryAfterMs: 2000 });
    expect(errorForStatus(ctx, 502, undefined)).toBeInstanceOf(ServerError);
    expect(errorForStatus({ ...ctx, credential: undefined }, 401, undefined).message).toContain('service.other_auth');
  });
});

describe('sniffing and loopback hosts', () => {
  it('recognises images and WAV by bytes', () => {
    expect(sniffMediaType(PNG_BYTES)).toBe('image/png');
    expect(sniffMediaType(JPEG_BYTES)).toBe('image/jpeg');
    expect(sniffMediaType(wavHeader(100))).toBe('audio/wav');
    expect(sniffMediaType(Buffer.from('BMP is what this text says, but it is text'))).toBeUndefined();
  });

  it('knows loopback hosts', () => {
    for (const h of ['localhost', '127.0.0.1', '127.1.2.3', '[::1]', 'api.localhost']) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['example.com', '10.0.0.1', '128.0.0.1', 'localhost.example.com']) expect(isLoopbackHost(h)).toBe(false);
  });
});
