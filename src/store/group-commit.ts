/**
 * Group commit: the one place where rq makes data durable.
 *
 * A transition hands in a `CommitOp`: open files whose contents must reach the disk,
 * then the renames that commit the transition, then the directories whose entries must
 * reach the disk. Ops that arrive while a flush is running wait for the next flush, and
 * each flush shares its fsyncs: every file fsync of the batch runs in parallel, the
 * renames run in order, and each directory is fsynced once for the whole batch. The
 * promise of an op resolves only after its directories are synced, so a reply sent
 * after it survives a power cut (write, fsync, rename, fsync dir; nq.c, qmail).
 *
 * A failed fsync rejects every op of the batch; a failed rename rejects its own op.
 * A batch that fails before its renames (a full disk, say) leaves the journal as it was:
 * what it appended, even a line cut short, is truncated away.
 *
 * The journal (the que index, que-index.ts) is appended to by the ops and replaced by a
 * compaction. A replacement waits in line with the ops and runs between two flushes, in
 * a turn of its own: never while a journal fsync is pending, never dropping lines a
 * flush has written, and only after the ops flushed before it have resolved (so
 * whatever they changed in memory once committed is there to be written out).
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

const fsyncAsync = promisify(fs.fsync);
const fdatasyncAsync = promisify(fs.fdatasync);

export interface CommitOp {
  /** Open file or directory descriptors to fsync before the renames. Closed afterwards. */
  fsyncFds?: number[];
  /** Lines to append to the journal before the renames (fsynced with the files). */
  journal?: string;
  /** `[from, to]` renames, in order. These are the commit points. */
  renames?: Array<[string, string]>;
  /** Directories to fsync after the renames. */
  syncDirs?: string[];
}

interface Pending {
  op: CommitOp;
  resolve: () => void;
  reject: (e: Error) => void;
}

interface Replacement {
  path: string;
  write: () => number;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface GroupCommitter {
  commit(op: CommitOp): Promise<void>;
  /** Open the journal the ops append to (at start-up); it holds `lines` lines already. */
  openJournal(path: string, lines: number): void;
  /**
   * Replace the journal between two flushes: once every op committed before this call
   * has been flushed and has resolved, `write()` rewrites the file at `path` and returns
   * how many lines it holds, and the journal is reopened there. Ops committed after this
   * call append to the new file. A failed `write()` rejects; the journal is reopened at
   * `path` either way, so nothing is appended to a file that was replaced.
   */
  replaceJournal(path: string, write: () => number): Promise<void>;
  /** Lines in the journal: those it held when opened, plus every line appended since. */
  journalLines(): number;
  /** No op or replacement is waiting or running. */
  idle(): boolean;
  /** Close the journal and the cached directory descriptors; only when idle (the queue is put away). */
  close(): void;
}

export function createGroupCommitter(): GroupCommitter {
  /** Ops and replacements, in the order they came. */
  let waiting: Array<Pending | Replacement> = [];
  /** A flush or a replacement is running. */
  let busy = false;
  let journalFd: number | undefined;
  let journalLines = 0;
  const dirFds = new Map<string, number>();

  /**
   * A descriptor of `dir` to fsync. A cached one whose directory has been removed (the
   * cleaner prunes emptied minute directories of done/, and a later move recreates them)
   * has no links left and is replaced: an fsync of the deleted inode would make nothing
   * durable.
   */
  function dirFd(dir: string): number {
    let fd = dirFds.get(dir);
    if (fd !== undefined && fs.fstatSync(fd).nlink === 0) {
      fs.closeSync(fd);
      fd = undefined;
    }
    if (fd === undefined) {
      fd = fs.openSync(dir, 'r');
      dirFds.set(dir, fd);
    }
    return fd;
  }

  function closeDirFds(): void {
    for (const fd of dirFds.values()) fs.closeSync(fd);
    dirFds.clear();
  }

  async function flush(batch: Pending[]): Promise<void> {
    const fds: number[] = [];
    let journal = '';
    for (const p of batch) {
      if (p.op.fsyncFds) fds.push(...p.op.fsyncFds);
      if (p.op.journal) journal += p.op.journal;
    }
    /** The journal's size before this batch appended to it, while the batch may still fail. */
    let appendedAt: { fd: number; size: number } | undefined;
    try {
      if (journal && journalFd !== undefined) {
        appendedAt = { fd: journalFd, size: fs.fstatSync(journalFd).size };
        const bytes = Buffer.from(journal);
        for (let off = 0; off < bytes.length; ) off += fs.writeSync(journalFd, bytes, off);
      }
      const syncs = fds.map((fd) => fsyncAsync(fd));
      if (appendedAt) syncs.push(fdatasyncAsync(appendedAt.fd));
      // Every fsync settles before the descriptors are closed, failed or not.
      const failure = (await Promise.allSettled(syncs)).find((r) => r.status === 'rejected');
      if (failure) throw failure.reason;
      if (appendedAt) for (let i = journal.indexOf('\n'); i >= 0; i = journal.indexOf('\n', i + 1)) journalLines++;
    } catch (e) {
      if (appendedAt) truncate(appendedAt.fd, appendedAt.size);
      for (const p of batch) p.reject(e as Error);
      return;
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
    const renamed: Pending[] = [];
    const dirs = new Set<string>();
    for (const p of batch) {
      try {
        for (const [from, to] of p.op.renames ?? []) fs.renameSync(from, to);
        for (const d of p.op.syncDirs ?? []) dirs.add(d);
        renamed.push(p);
      } catch (e) {
        p.reject(e as Error);
      }
    }
    // Busy directories keep their descriptors; the hashed done/ tree rolls every minute.
    if (dirFds.size > 256) closeDirFds();
    try {
      await Promise.all([...dirs].map((d) => fsyncAsync(dirFd(d))));
    } catch (e) {
      for (const p of renamed) p.reject(e as Error);
      return;
    }
    for (const p of renamed) p.resolve();
  }

  /** Cut the journal back to `size` bytes; a failure is left to the listing check at start-up (que-index.ts). */
  function truncate(fd: number, size: number): void {
    try {
      fs.ftruncateSync(fd, size);
    } catch {
      // the index is a cache: a torn line is skipped when it is read
    }
  }

  function openJournal(path: string, lines: number): void {
    const fd = fs.openSync(path, 'a');
    if (journalFd !== undefined) fs.closeSync(journalFd);
    journalFd = fd;
    journalLines = lines;
  }

  /** Run a replacement. Reopened even after a failed write: the file may be new already. */
  function replace(r: Replacement): void {
    let lines = journalLines;
    let error: unknown;
    try {
      lines = r.write();
    } catch (e) {
      error = e;
    }
    try {
      openJournal(r.path, lines);
    } catch (e) {
      error ??= e;
    }
    if (error === undefined) r.resolve();
    else r.reject(error as Error);
  }

  /** Start the next flush (the ops up to the next replacement), or the next replacement. */
  function kick(): void {
    const next = waiting[0];
    if (busy || next === undefined) return;
    busy = true;
    const done = (): void => {
      busy = false;
      kick();
    };
    if (!('op' in next)) {
      waiting.shift();
      // A turn of its own: the flushed ops' continuations (microtasks) have all run.
      setImmediate(() => {
        replace(next);
        done();
      });
      return;
    }
    const batch: Pending[] = [];
    for (const w of waiting) {
      if (!('op' in w)) break;
      batch.push(w);
    }
    waiting = waiting.slice(batch.length);
    void flush(batch).finally(done);
  }

  /** Queue an op or a replacement. The kick waits a turn, so the ops of one turn share a flush. */
  function enqueue(w: Pending | Replacement): void {
    waiting.push(w);
    if (waiting.length === 1) setImmediate(kick);
  }

  return {
    commit: (op) => new Promise<void>((resolve, reject) => enqueue({ op, resolve, reject })),
    openJournal,
    replaceJournal: (path, write) => new Promise<void>((resolve, reject) => enqueue({ path, write, resolve, reject })),
    journalLines: () => journalLines,
    idle: () => !busy && waiting.length === 0,
    close: () => {
      closeDirFds();
      if (journalFd !== undefined) fs.closeSync(journalFd);
      journalFd = undefined;
    },
  };
}
