import { createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';

// A whole file's SHA-256, streamed (the file may be as large as enroll.max_file_size): how the face
// cache checks a kept download and enrollment a staged copy against the hash recorded for them.

/** Hex SHA-256 of the file's bytes; rejects when it cannot be read. */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
