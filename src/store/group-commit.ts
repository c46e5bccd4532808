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

export interface GroupCommitter {
  commit(op: CommitOp): Promise<void>;
  /** Open (or reopen) the journal the ops append to; it holds `lines` lines already. */
  setJournal(path: string, lines: number): void;
  /** Lines in the journal: those it held when opened, plus every line appended since. */
  journalLines(): number;
}

export function createGroupCommitter(): GroupCommitter {
  let pending: Pending[] = [];
  let flushing = false;
  let journalFd: number | undefined;
  let journalLines = 0;
  const dirFds = new Map<string, number>();

  function dirFd(dir: string): number {
    let fd = dirFds.get(dir);
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
    try {
      const syncs: Array<Promise<void>> = fds.map((fd) => fsyncAsync(fd));
      if (journal && journalFd !== undefined) {
        fs.writeSync(journalFd, journal);
        for (let i = journal.indexOf('\n'); i >= 0; i = journal.indexOf('\n', i + 1)) journalLines++;
        syncs.push(fdatasyncAsync(journalFd));
      }
      await Promise.all(syncs);
    } catch (e) {
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

  function kick(): void {
    if (flushing || pending.length === 0) return;
    flushing = true;
    const batch = pending;
    pending = [];
    void flush(batch).finally(() => {
      flushing = false;
      kick();
    });
  }

  return {
    commit(op) {
      return new Promise<void>((resolve, reject) => {
        pending.push({ op, resolve, reject });
        if (pending.length === 1) setImmediate(kick);
      });
    },
    setJournal(path, lines) {
      if (journalFd !== undefined) fs.closeSync(journalFd);
      journalFd = fs.openSync(path, 'a');
      journalLines = lines;
    },
    journalLines: () => journalLines,
  };
}
