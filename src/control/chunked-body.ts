import { ChunkedDecoder, type ChunkedFault } from '../util/chunked-decoder.js';
import { WireRefusal } from './wire-request.js';

// A chunked request body on the control socket: util/chunked-decoder.ts with this socket's limits
// (chunk and trailer lines of at most 1 KB, a trailer of 16 KB, the body's own limit checked from
// each chunk's size before its data comes), its faults as the HTTP statuses the caller is answered
// with, and the data collected, as the handlers take a request whole.

const LINE_MAX = 1024;
const TRAILER_MAX = 16 * 1024;

export class ChunkedBody {
  private readonly decoder: ChunkedDecoder;
  private readonly parts: Buffer[] = [];

  constructor(private readonly maxBytes: number) {
    this.decoder = new ChunkedDecoder({ lineMaxBytes: LINE_MAX, trailerMaxBytes: TRAILER_MAX, sizeMaxDigits: 8, bodyMaxBytes: maxBytes }, (f) => this.refusal(f));
  }

  /**
   * Takes the next bytes of the body; true once the last chunk and the trailer are in (bytes after
   * them are not looked at). Throws WireRefusal for a malformed or oversized body.
   */
  push(buf: Buffer): boolean {
    this.decoder.feed(buf, (piece) => this.parts.push(piece));
    return this.decoder.done;
  }

  /** The body's bytes, once push() has returned true. */
  body(): Buffer {
    return Buffer.concat(this.parts);
  }

  private refusal(f: ChunkedFault): WireRefusal {
    switch (f.kind) {
      case 'line-too-long': return new WireRefusal(400, `a line of the chunked body is longer than ${LINE_MAX} bytes`);
      case 'bare-lf': return new WireRefusal(400, 'a line of the chunked body ends with LF alone; HTTP lines end with CRLF');
      case 'chunk-overrun': return new WireRefusal(400, 'a chunk of the body is longer than its size says');
      case 'bad-size': return new WireRefusal(400, 'a chunk size of the body is not a hexadecimal number');
      case 'trailer-too-large': return new WireRefusal(431, `the chunked body's trailer is larger than ${TRAILER_MAX} bytes`);
      case 'body-too-large': return new WireRefusal(413, `the request body is larger than ${this.maxBytes} bytes, the most the control socket takes`);
    }
  }
}
