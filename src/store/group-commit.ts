/**
 * Group commit: the one place where rq makes data durable.
 *
 * A change hands in a `CommitOp`: its journal records (journal.ts), then the renames that
 * carry it out in the message directories. Ops that arrive while a flush is running wait
 * for the next flush, and each flush shares one `fdatasync` of the journal: the records
 * of every op of the batch are appended and synced, then each op's renames run, in
 * order, and its promise resolves. The journal is the commit point: a reply sent after
 * the promise survives a power cut, because start-up replays the records over whatever
 * the directories kept (replay.ts). The directories themselves are made durable by a
 * checkpoint (below), not per op.
 *
 * An op may also carry files and directories to fsync with the journal and directories
 * to fsync after its renames: attachments too big for a record are made durable where
 * they are, as before the journal (write, fsync, rename, fsync the directory).
 *
 * A failed sync rejects every op of the batch, and what the batch appended, even a line
 * cut short, is truncated away (a full disk, say). A rename that fails after its record
 * was synced rejects its own op, and the op's `undo` line is appended, so replay leaves
 * that message as the directories have it.
 *
 * A checkpoint marks the journal between two flushes (every op before the mark has made
 * its renames), runs `sync` (a syncfs of the directories' filesystem) while later ops go
 * on, and then, between two flushes again, `cut` rewrites the journal from memory with
 * the records appended after the mark as its tail (those the sync may not have
 * covered). A replacement never runs while a journal fsync is pending, never drops lines
 * a flush has written, and runs only after the ops flushed before it have resolved (so
 * whatever they changed in memory once committed is there to be written out).
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

const fsyncAsync = promisify(fs.fsync);
const fdatasyncAsync = promisify(fs.fdatasync);

export interface CommitOp {
  /** Records to append to the journal: the commit point, synced before the renames. */
  journal?: string;
  /**
   * Writes the renames need (the files they put in place), run while the journal syncs:
   * they only write temp names, so the order does not matter until the renames. A
   * rejection rejects the op alone, as a failed rename does.
   */
  prepare?: () => Promise<void>;
  /** `[from, to]` renames, in order, once the records are synced. */
  renames?: Array<[string, string]>;
  /** Appended (not synced) if a rename fails after the records were synced. */
  undo?: string;
  /** Open file or directory descriptors to fsync with the journal (content made durable in place). Closed afterwards. */
  fsyncFds?: number[];
  /** Directories to fsync after the renames (content made durable in place). */
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

/** A checkpoint's mark, waiting for its turn between two flushes. */
interface Mark {
  mark: (at: { fd: number; size: number }) => void;
}

export interface GroupCommitter {
  commit(op: CommitOp): Promise<void>;
  /** Open the journal the ops append to (at start-up); it holds `lines` lines already. */
  openJournal(path: string, lines: number): void;
  /**
   * A checkpoint (see above): `sync()` makes the directories durable as every op flushed
   * before this call left them; then, between two flushes, `cut(tail)` rewrites the file
   * at `path` from memory followed by `tail`, the journal's text appended since the mark,
   * and returns how many lines it holds. A failed sync or cut rejects, and the journal
   * goes on as it was.
   */
  checkpoint(path: string, sync: () => Promise<void>, cut: (tail: string) => number): Promise<void>;
  /** Lines in the journal: those it held when opened, plus every line appended since. */
  journalLines(): number;
  /** Lines and bytes appended since the journal was opened or last replaced. */
  appended(): { lines: number; bytes: number };
  /** No op or replacement is waiting or running. */
  idle(): boolean;
  /** Close the journal and the cached directory descriptors; only when idle (the queue is put away). */
  close(): void;
}

export function createGroupCommitter(): GroupCommitter {
  /** Ops and replacements, in the order they came. */
  let waiting: Array<Pending | Replacement | Mark> = [];
  /** A flush or a replacement is running. */
  let busy = false;
  let journalFd: number | undefined;
  let journalLines = 0;
  let appendedLines = 0;
  let appendedBytes = 0;
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

  /** Append `text` to the journal; returns how many lines it held. */
  function append(fd: number, text: string): number {
    const bytes = Buffer.from(text);
    for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off);
    appendedBytes += bytes.length;
    let lines = 0;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
    return lines;
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
    let lines = 0;
    /** The ops' prepares under way, and the error of each that failed. */
    const prepared: Array<Promise<void>> = [];
    const unprepared = new Map<Pending, unknown>();
    try {
      if (journal && journalFd !== undefined) {
        appendedAt = { fd: journalFd, size: fs.fstatSync(journalFd).size };
        lines = append(journalFd, journal);
      }
      const syncs = fds.map((fd) => fsyncAsync(fd));
      if (appendedAt) syncs.push(fdatasyncAsync(appendedAt.fd));
      for (const p of batch) if (p.op.prepare) prepared.push(p.op.prepare().catch((e: unknown) => void unprepared.set(p, e)));
      // Every fsync settles before the descriptors are closed, failed or not.
      const [settled] = await Promise.all([Promise.allSettled(syncs), ...prepared]);
      const failure = settled.find((r) => r.status === 'rejected');
      if (failure) throw failure.reason;
      journalLines += lines;
      appendedLines += lines;
    } catch (e) {
      if (appendedAt) truncate(appendedAt.fd, appendedAt.size);
      for (const p of batch) p.reject(e as Error);
      return;
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
    const renamed: Pending[] = [];
    const dirs = new Set<string>();
    let undo = '';
    for (const p of batch) {
      try {
        if (unprepared.has(p)) throw unprepared.get(p);
        for (const [from, to] of p.op.renames ?? []) fs.renameSync(from, to);
        for (const d of p.op.syncDirs ?? []) dirs.add(d);
        renamed.push(p);
      } catch (e) {
        if (p.op.undo) undo += p.op.undo;
        p.reject(e as Error);
      }
    }
    if (undo && journalFd !== undefined) {
      try {
        const n = append(journalFd, undo);
        journalLines += n;
        appendedLines += n;
      } catch {
        // replay then carries out the failed change: the directories are made to match its record
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
    const fd = fs.openSync(path, 'a+');
    if (journalFd !== undefined) fs.closeSync(journalFd);
    journalFd = fd;
    journalLines = lines;
    appendedLines = 0;
    appendedBytes = 0;
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
    if ('mark' in next) {
      // Between two flushes: every op flushed so far has made its renames.
      waiting.shift();
      next.mark(journalFd !== undefined ? { fd: journalFd, size: fs.fstatSync(journalFd).size } : { fd: -1, size: 0 });
      kick();
      return;
    }
    busy = true;
    const done = (): void => {
      busy = false;
      kick();
    };
    if ('path' in next) {
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
  function enqueue(w: Pending | Replacement | Mark): void {
    waiting.push(w);
    if (waiting.length === 1) setImmediate(kick);
  }

  return {
    commit: (op) => new Promise<void>((resolve, reject) => enqueue({ op, resolve, reject })),
    openJournal,
    checkpoint: (file, sync, cut) =>
      new Promise<{ fd: number; size: number }>((mark) => enqueue({ mark })).then(async (at) => {
        await sync();
        await new Promise<void>((resolve, reject) =>
          enqueue({
            path: file,
            write: () => {
              if (journalFd !== at.fd) throw new Error('the journal was replaced during the checkpoint');
              const size = fs.fstatSync(at.fd).size;
              const tail = Buffer.alloc(size - at.size);
              for (let off = 0; off < tail.length; ) off += fs.readSync(at.fd, tail, off, tail.length - off, at.size + off);
              return cut(tail.toString('utf8'));
            },
            resolve,
            reject,
          }),
        );
      }),
    journalLines: () => journalLines,
    appended: () => ({ lines: appendedLines, bytes: appendedBytes }),
    idle: () => !busy && waiting.length === 0,
    close: () => {
      closeDirFds();
      if (journalFd !== undefined) fs.closeSync(journalFd);
      journalFd = undefined;
    },
  };
}
