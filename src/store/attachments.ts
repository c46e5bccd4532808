/**
 * A message's attachments as they lie in its `attach/` directory (spec/rq.md §2.10): which
 * files count, and their md5. One rule for every reader (get_message, clone, a worker's
 * `dup`, the relay): an attachment is a regular file whose name does not start with `.`
 * and does not end in `.tmp`. `attach_message` writes `<name>.tmp` and renames it, so a
 * `.tmp` file is an attachment still being written, or one left by a crash, never a
 * finished one. Reads only; the queue engine is the one writer.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errnoCode } from '../domain/errors.js';

/** The attachment names of the message in `msgDir` (in its `attach/`), sorted; none when it has no `attach/`. */
export function attachmentNames(msgDir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(msgDir, 'attach'), { withFileTypes: true });
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return [];
    throw e;
  }
  return entries
    .filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.endsWith('.tmp'))
    .map((d) => d.name)
    .sort();
}

/** The md5 (hex) and the size of a file, in one streamed read. */
export async function hashFile(file: string): Promise<{ md5: string; size: number }> {
  const hash = crypto.createHash('md5');
  let size = 0;
  for await (const chunk of fs.createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { md5: hash.digest('hex'), size };
}
