/**
 * The one logger: pino JSON lines at `RQ_LOG_LEVEL` (default info), on stdout unless the
 * caller gives a destination (rq-mgr gives `log/rq.log` when it runs as a daemon). Every
 * process binds `pid`, and queue processes bind `queue`; lines about a message add
 * `msg_id`. A script's own output never goes here; it stays in its `job/stdio.log`.
 *
 * A logger that cannot write never takes its process down, nor holds it up. Lines go to a
 * log destination made here (createLogDestination), which writes asynchronously and never
 * throws or emits an error: a line that cannot be written (a full disk, a broken pipe, a
 * reader that does not keep up) is dropped and counted, and a write is tried again every
 * second. The first line written after drops says how many were dropped and why:
 * `12 log lines dropped (ENOSPC)`. A line that a failed write cut short is finished before
 * anything else is written, so every line of the log stays whole JSON.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino, type DestinationStream, type Logger } from 'pino';
import { coerceError, errnoCode } from '../domain/errors.js';

export type { Logger };

/** Bytes of lines waiting for their write at most; more are dropped (a log that cannot keep up must not eat memory). */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;
/** While writes fail, the next try is this long after the last one. */
const RETRY_MS = 1_000;
/** flushSync waits this long at most for a pipe that is full (EAGAIN). */
const FLUSH_SYNC_MS = 1_000;
/** pino's level number of `warn`, for the line that counts the drops. */
const WARN_LEVEL = 40;
const NEWLINE = 0x0a;

/** Every destination made in this process, each flushed at exit. */
const live = new Set<LogDestination>();

/** Where log lines go: pino's stream, and what rq-mgr needs around it. */
export interface LogDestination extends DestinationStream {
  /** Queue a line (or several); never throws, never blocks. */
  write(text: string): void;
  /** Calls `cb` once every line queued so far has been written or dropped (pino's `logger.flush`). */
  flush(cb?: () => void): void;
  /** Write what is queued now, synchronously, before an exit; gives up on a write error at once and on a full pipe after a second. */
  flushSync(): void;
  /** Open the file again (logrotate's SIGUSR1); nothing for a file descriptor. */
  reopen(): void;
}

/**
 * A destination on an open file descriptor (`{fd: 1}`: stdout) or on a file, opened here
 * for appending (its directory made). `bindings` go into the line that counts drops, so
 * that a reader of rq-mgr's log knows which process dropped them. What is queued at
 * process exit is written then (flushSync).
 */
export function createLogDestination(to: { fd: number } | { file: string }, bindings: Record<string, unknown> = {}): LogDestination {
  const dest = new Destination(to, bindings);
  if (live.size === 0) process.on('exit', () => live.forEach((d) => d.flushSync()));
  live.add(dest);
  return dest;
}

/** Newlines in bytes `from`.. of `buf`: the lines of a chunk a failed write did not finish. */
function linesFrom(buf: Buffer, from: number): number {
  let n = 0;
  for (let i = buf.indexOf(NEWLINE, from); i >= 0; i = buf.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** An error's reason as the drop line gives it: its errno code (`ENOSPC`), else its message. */
function reasonOf(e: unknown): string {
  return errnoCode(e) ?? coerceError(e).message;
}

class Destination implements LogDestination {
  private fd: number;
  private readonly file: string | undefined;
  private readonly bindings: Record<string, unknown>;
  private pending: string[] = [];
  private pendingBytes = 0;
  /** A chunk is being written (fs.write in flight). */
  private writing = false;
  /** The last write failed: lines are dropped until the retry timer's write works. */
  private retry: NodeJS.Timeout | undefined;
  /** Lines dropped since the last drop line was written, and the first reason why. */
  private dropped = 0;
  private reason = '';
  /** Why the last write failed (the reason of the lines dropped until the retry). */
  private failure = '';
  /** The end of a line a failed write cut short: written first, so that the line is whole. */
  private rest: Buffer = Buffer.alloc(0);
  private reopenWanted = false;
  private flushed: Array<() => void> = [];

  constructor(to: { fd: number } | { file: string }, bindings: Record<string, unknown>) {
    this.bindings = bindings;
    if ('fd' in to) {
      this.fd = to.fd;
      this.file = undefined;
    } else {
      this.file = to.file;
      this.fd = openLog(to.file);
    }
  }

  write(text: string): void {
    if (this.retry) return this.drop(1, this.failure);
    if (this.pendingBytes + text.length > MAX_PENDING_BYTES) return this.drop(1, `${MAX_PENDING_BYTES} bytes of lines were waiting`);
    this.queue(text);
    this.kick();
  }

  flush(cb: () => void = () => {}): void {
    if (this.writing || this.pending.length > 0) this.flushed.push(cb);
    else process.nextTick(cb);
  }

  flushSync(): void {
    const chunk = this.takeChunk();
    if (chunk === undefined) return;
    const giveUpAt = Date.now() + FLUSH_SYNC_MS;
    let off = 0;
    while (off < chunk.buf.length) {
      try {
        off += fs.writeSync(this.fd, chunk.buf, off);
      } catch (e) {
        if (isFullPipe(e) && Date.now() < giveUpAt) {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
          continue;
        }
        return this.failed(e, chunk, off);
      }
    }
  }

  reopen(): void {
    if (this.file === undefined) return;
    this.reopenWanted = true;
    if (this.writing) return;
    this.reopenNow();
    this.kick();
  }

  private queue(text: string): void {
    this.pending.push(text);
    this.pendingBytes += text.length;
  }

  private reopenNow(): void {
    this.reopenWanted = false;
    let fd: number;
    try {
      fd = openLog(this.file!);
    } catch (e) {
      // Keep writing where we were, and say so there.
      this.queue(`${this.line({ err: reasonOf(e) }, `cannot reopen ${this.file}; still writing to the file it had open`)}\n`);
      return;
    }
    const old = this.fd;
    this.fd = fd;
    // A line cut short stays so in the old file; the new one starts with a whole line.
    if (this.rest.length > 0) this.drop(1, this.failure);
    this.rest = Buffer.alloc(0);
    fs.close(old, () => {});
  }

  private drop(lines: number, reason: string): void {
    if (this.dropped === 0) this.reason = reason;
    this.dropped += lines;
  }

  /** A pino-shaped line of this destination's own. */
  private line(fields: Record<string, unknown>, msg: string): string {
    return JSON.stringify({ level: WARN_LEVEL, time: Date.now(), pid: process.pid, ...this.bindings, ...fields, msg });
  }

  /**
   * The next chunk to write: the end of a line cut short, the drop line when drops are
   * owed, then the queued lines. Undefined when there is nothing to write.
   */
  private takeChunk(): Chunk | undefined {
    if (this.pending.length === 0 && this.dropped === 0 && this.rest.length === 0) return undefined;
    const owed = this.dropped;
    const notice = owed > 0 ? `${this.line({ dropped: owed }, `${owed} log line${owed === 1 ? '' : 's'} dropped (${this.reason})`)}\n` : '';
    const text = Buffer.from(notice + this.pending.join(''));
    const chunk: Chunk = { buf: Buffer.concat([this.rest, text]), noticeAt: this.rest.length, linesAt: this.rest.length + Buffer.byteLength(notice), owed, reason: this.reason };
    this.pending = [];
    this.pendingBytes = 0;
    this.dropped = 0;
    this.reason = '';
    this.rest = Buffer.alloc(0);
    return chunk;
  }

  /** Start writing the next chunk unless a write is in flight or a retry is waiting. */
  private kick(): void {
    if (this.writing || this.retry) return;
    if (this.reopenWanted) this.reopenNow();
    const chunk = this.takeChunk();
    if (chunk === undefined) return this.tellFlushed();
    this.writing = true;
    const fd = this.fd;
    const next = (off: number): void => {
      fs.write(fd, chunk.buf, off, chunk.buf.length - off, null, (err, n) => {
        if (err && isFullPipe(err)) {
          // A full pipe that does not block: its reader will make room.
          setTimeout(() => next(off), 10);
          return;
        }
        if (!err && off + n < chunk.buf.length) return next(off + n);
        this.writing = false;
        if (err) return this.failed(err, chunk, off);
        this.kick();
      });
    };
    next(0);
  }

  /**
   * A write of `chunk` failed at byte `off`. A line it cut short is finished first next
   * time; the lines after it, and those queued meanwhile, are counted as dropped, and so,
   * when the drop line was not begun, are the drops it counted. The next try is in
   * RETRY_MS; whoever waits for a flush is told now.
   */
  private failed(e: unknown, chunk: Chunk, off: number): void {
    this.failure = reasonOf(e);
    // Cut short: a line of the chunk, or the end of a line the chunk began with.
    const isCut = off < chunk.noticeAt || (off > 0 && chunk.buf[off - 1] !== NEWLINE);
    const restEnd = isCut ? chunk.buf.indexOf(NEWLINE, off) + 1 : off;
    this.rest = Buffer.from(chunk.buf.subarray(off, restEnd));
    if (restEnd <= chunk.noticeAt && chunk.owed > 0) this.drop(chunk.owed, chunk.reason);
    this.drop(linesFrom(chunk.buf, Math.max(restEnd, chunk.linesAt)), this.failure);
    // The lines queued meanwhile go too, as every line does until the retry.
    this.drop(this.pending.length, this.failure);
    this.pending = [];
    this.pendingBytes = 0;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.kick();
    }, RETRY_MS);
    this.retry.unref();
    this.tellFlushed();
  }

  private tellFlushed(): void {
    const callbacks = this.flushed;
    this.flushed = [];
    for (const cb of callbacks) cb();
  }
}

/** Bytes to write: the end of a line cut short (up to `noticeAt`), the drop line counting `owed` drops (up to `linesAt`), the queued lines. */
interface Chunk {
  buf: Buffer;
  noticeAt: number;
  linesAt: number;
  owed: number;
  reason: string;
}

/** A write to a full pipe that does not block (EAGAIN): to be tried again, not a failure. */
function isFullPipe(e: unknown): boolean {
  const code = errnoCode(e);
  return code === 'EAGAIN' || code === 'EBUSY';
}

/** Open a log file for appending, its directory made first. */
function openLog(file: string): number {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return fs.openSync(file, 'a');
}

export function createLogger(bindings: Record<string, unknown>, destination: DestinationStream = createLogDestination({ fd: 1 }, bindings)): Logger {
  return pino({ level: process.env['RQ_LOG_LEVEL'] ?? 'info', base: { pid: process.pid, ...bindings } }, destination);
}
