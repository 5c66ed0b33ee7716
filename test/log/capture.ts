import { Writable } from 'node:stream';

/** A destination for createLogger that keeps each line written. */
export function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { lines, destination: destination as unknown as NodeJS.WritableStream & { write(s: string): boolean } };
}
