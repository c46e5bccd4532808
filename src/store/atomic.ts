/**
 * Durable whole-file writes: write a temp file in the same directory, fsync it, rename
 * it over the target, fsync the directory (nq's hidden name → rename → fsync(dirfd)).
 * Configs and the compacted que index are written this way; messages go through the
 * group committer instead.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * Write `content` (a string, or chunks for big files) to `file` durably. With `mode`, the
 * file has that mode from its first byte (the umask may only narrow it): a temp file left
 * by a crash is removed, and the new one is created with the mode.
 */
export function writeFileDurably(file: string, content: string | Iterable<string>, opts: { mode?: number } = {}): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  if (opts.mode !== undefined) fs.rmSync(tmp, { force: true });
  const fd = fs.openSync(tmp, opts.mode === undefined ? 'w' : 'wx', opts.mode);
  try {
    if (typeof content === 'string') fs.writeSync(fd, content);
    else for (const chunk of content) fs.writeSync(fd, chunk);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dfd = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}
