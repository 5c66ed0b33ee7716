import { WireRefusal } from './wire-request.js';

// A chunked request body (RFC 9112 7.1) decoded as it arrives, in bounded memory: the data up to
// `maxBytes` (a larger body is refused with 413 as soon as a chunk's size says so), chunk lines
// and trailer lines of at most LINE_MAX bytes. Chunk extensions and trailer fields are read past:
// nothing on the control socket uses them.

const LINE_MAX = 1024;
const TRAILER_MAX = 16 * 1024;

type State = 'size' | 'data' | 'data-end' | 'trailer' | 'done';

export class ChunkedBody {
  private state: State = 'size';
  private line = '';
  private remaining = 0;
  private trailerBytes = 0;
  private readonly parts: Buffer[] = [];
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * Takes the next bytes of the body; true once the last chunk and the trailer are in (bytes after
   * them are not looked at). Throws WireRefusal for a malformed or oversized body.
   */
  push(buf: Buffer): boolean {
    let at = 0;
    while (at < buf.length && this.state !== 'done') {
      if (this.state === 'data') {
        const n = Math.min(this.remaining, buf.length - at);
        this.parts.push(buf.subarray(at, at + n));
        this.remaining -= n;
        at += n;
        if (this.remaining === 0) this.state = 'data-end';
        continue;
      }
      const lf = buf.indexOf(0x0a, at);
      const end = lf < 0 ? buf.length : lf + 1;
      this.line += buf.toString('latin1', at, end);
      at = end;
      if (this.line.length > LINE_MAX) throw new WireRefusal(400, `a line of the chunked body is longer than ${LINE_MAX} bytes`);
      if (lf < 0) continue;
      const line = this.line;
      this.line = '';
      if (!line.endsWith('\r\n')) throw new WireRefusal(400, 'a line of the chunked body ends with LF alone; HTTP lines end with CRLF');
      this.takeLine(line.slice(0, -2));
    }
    return this.state === 'done';
  }

  /** The body's bytes, once push() has returned true. */
  body(): Buffer {
    return Buffer.concat(this.parts, this.total);
  }

  private takeLine(line: string): void {
    switch (this.state) {
      case 'size': {
        const size = chunkSize(line);
        if (this.total + size > this.maxBytes) throw new WireRefusal(413, `the request body is larger than ${this.maxBytes} bytes, the most the control socket takes`);
        this.total += size;
        this.remaining = size;
        this.state = size === 0 ? 'trailer' : 'data';
        return;
      }
      case 'data-end':
        if (line !== '') throw new WireRefusal(400, 'a chunk of the body is longer than its size says');
        this.state = 'size';
        return;
      case 'trailer':
        this.trailerBytes += line.length + 2;
        if (this.trailerBytes > TRAILER_MAX) throw new WireRefusal(431, `the chunked body's trailer is larger than ${TRAILER_MAX} bytes`);
        if (line === '') this.state = 'done';
        return;
      default:
        return;
    }
  }
}

/** chunk-size [ BWS ";" chunk-ext ]: at most 8 hex digits (4 GB is far past any limit here). */
function chunkSize(line: string): number {
  const semi = line.indexOf(';');
  const digits = (semi < 0 ? line : line.slice(0, semi)).replace(/[ \t]+$/, '');
  if (!/^[0-9a-fA-F]{1,8}$/.test(digits)) throw new WireRefusal(400, 'a chunk size of the body is not a hexadecimal number');
  return parseInt(digits, 16);
}
