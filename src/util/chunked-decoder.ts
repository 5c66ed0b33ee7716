// A chunked HTTP/1.1 body (RFC 9112 7.1) decoded as it arrives, in bounded memory: the state
// machine the agent's client (answers from the service) and the control socket (requests from
// programs on the terminal) share. Each side passes its own limits and turns a fault into its own
// error (the client's HPE_ codes, the control socket's HTTP statuses). Chunk extensions and trailer
// fields are read past: nothing the agent speaks to uses them.
//
// Strict where a lenient reading would let the peer confuse the reader, as node's llhttp is: every
// line ends with CRLF, a chunk size is hex digits alone (optionally followed by whitespace and
// `;ext`), no leading whitespace, and a chunk's data is followed by CRLF at once.

export interface ChunkedLimits {
  /** A size line, the line after a chunk's data, or one trailer line, CRLF included. */
  lineMaxBytes: number;
  /** All trailer lines together. */
  trailerMaxBytes: number;
  /** Hex digits of a chunk size (8 is 4 GB). */
  sizeMaxDigits: number;
  /** The body's data; checked from each chunk's size before its data comes. */
  bodyMaxBytes?: number;
}

export type ChunkedFault =
  | { kind: 'line-too-long' }
  | { kind: 'bare-lf' }
  | { kind: 'chunk-overrun' }
  | { kind: 'bad-size'; text: string }
  | { kind: 'trailer-too-large' }
  | { kind: 'body-too-large' };

type Phase = 'size' | 'data' | 'data-end' | 'trailer' | 'done';

const SIZE = /^([0-9a-fA-F]+)[ \t]*(?:;|$)/;

export class ChunkedDecoder {
  private phase: Phase = 'size';
  /** A size, data-end or trailer line split across reads. */
  private line = '';
  private remaining = 0;
  private trailerBytes = 0;
  private total = 0;

  constructor(private readonly limits: ChunkedLimits, private readonly fault: (f: ChunkedFault) => Error) {}

  /** True once the last chunk and the trailer are in. */
  get done(): boolean {
    return this.phase === 'done';
  }

  /**
   * Takes the next bytes of the body, handing each piece of data to `out`; returns how many bytes
   * of `buf` it used: fewer than its length only once the body is over (what follows is not the
   * body's). Throws the fault's error for a malformed or oversized body.
   */
  feed(buf: Buffer, out: (piece: Buffer) => void): number {
    let at = 0;
    while (at < buf.length && this.phase !== 'done') {
      if (this.phase === 'data') {
        const n = Math.min(this.remaining, buf.length - at);
        out(buf.subarray(at, at + n));
        this.remaining -= n;
        at += n;
        if (this.remaining === 0) this.phase = 'data-end';
        continue;
      }
      const lf = buf.indexOf(0x0a, at);
      const end = lf < 0 ? buf.length : lf + 1;
      this.line += buf.toString('latin1', at, end);
      at = end;
      if (this.line.length > this.limits.lineMaxBytes) throw this.fault({ kind: 'line-too-long' });
      if (lf < 0) break;
      const line = this.line;
      this.line = '';
      if (!line.endsWith('\r\n')) throw this.fault({ kind: 'bare-lf' });
      this.takeLine(line.slice(0, -2));
    }
    return at;
  }

  private takeLine(line: string): void {
    switch (this.phase) {
      case 'size': {
        const size = this.chunkSize(line);
        if (this.limits.bodyMaxBytes !== undefined && this.total + size > this.limits.bodyMaxBytes) throw this.fault({ kind: 'body-too-large' });
        this.total += size;
        this.remaining = size;
        this.phase = size === 0 ? 'trailer' : 'data';
        return;
      }
      case 'data-end':
        if (line !== '') throw this.fault({ kind: 'chunk-overrun' });
        this.phase = 'size';
        return;
      case 'trailer':
        if (line === '') {
          this.phase = 'done';
          return;
        }
        this.trailerBytes += line.length + 2;
        if (this.trailerBytes > this.limits.trailerMaxBytes) throw this.fault({ kind: 'trailer-too-large' });
        return;
      default:
        return;
    }
  }

  /** chunk-size [ BWS ";" chunk-ext ]. */
  private chunkSize(line: string): number {
    const digits = SIZE.exec(line)?.[1];
    if (digits === undefined || digits.length > this.limits.sizeMaxDigits) throw this.fault({ kind: 'bad-size', text: line.slice(0, 20) });
    return parseInt(digits, 16);
  }
}
