/**
 * Test support for a full disk, the real thing: a small tmpfs mounted over a directory of
 * the test's install root (the tests run as root), filled to its last byte by one file
 * that the test removes to free the space again. The mount goes when the test ends,
 * passed or failed: lazily (`umount -l`), so a process that still has a file open there
 * cannot keep it; on a failure its files are first copied beside it (`<dir>.kept`), with
 * the install root that is kept as evidence.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { onTestFinished } from 'vitest';

export interface SmallDisk {
  /** Write one file until the disk refuses (ENOSPC): nothing more fits anywhere on it. */
  fill(): void;
  /** Remove that file. */
  free(): void;
}

/** Mount a tmpfs of `bytes` at `dir` (made if missing) for the running test. */
export function smallDisk(dir: string, bytes: number): SmallDisk {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  onTestFinished((ctx) => {
    try {
      if (ctx.task.result?.state !== 'pass') fs.cpSync(dir, `${dir}.kept`, { recursive: true, filter: (file) => !fs.lstatSync(file).isSocket() });
    } finally {
      execFileSync('umount', ['-l', dir]);
    }
  });
  const filler = `${dir}/.filler`;
  return {
    fill() {
      const fd = fs.openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 0x2e);
      try {
        for (;;) fs.writeSync(fd, chunk);
      } catch (e) {
        if ((e as { code?: unknown }).code !== 'ENOSPC') throw e;
      } finally {
        fs.closeSync(fd);
      }
    },
    free() {
      fs.rmSync(filler, { force: true });
    },
  };
}

/**
 * 'spare' when `dir` is a directory made ahead for a new message (store/spare-dirs.ts):
 * empty, or holding only an empty `msg`. Else what it holds: a half-made message.
 */
export function spareContent(dir: string): string {
  const names = fs.readdirSync(dir);
  const spare = names.length === 0 || (names.length === 1 && names[0] === 'msg' && fs.statSync(path.join(dir, 'msg')).size === 0);
  return spare ? 'spare' : names.join(',');
}
