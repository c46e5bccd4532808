/**
 * A queue's history (the dashboard's History pages and the durable counters of
 * `/metrics`): done and err, the messages waiting, and the wait (que → run start) and
 * run times, by minute, 10 minutes and hour, in the file `history.bin` of the queue's
 * directory (its layout: domain/history-layout.ts). This module is its only writer.
 *
 * Nothing is written per message: an event adds to the records of the current minute,
 * 10 minutes and hour and to the totals, in memory. The file is written when a minute
 * ends that saw anything (an event, or messages waiting), when the queue is put away or
 * stops, and, while the current minute has news, once `flushMs` has passed since the last
 * write (RQ_HISTORY_FLUSH_MS, by default a minute): the header and the three current
 * records, four positioned writes of at most 512 bytes, no fsync. A queue that does nothing
 * writes nothing. A crash loses what came since the last write, at most that long.
 *
 * The file is read once, at the first use: the totals, and the current periods' records,
 * which go on counting where they were.
 */
import fs from 'node:fs';
import path from 'node:path';
import { coerceError, errnoCode } from '../domain/errors.js';
import {
  BINS,
  HEADER_BYTES,
  HISTORY_FILE,
  HISTORY_FILE_BYTES,
  RANGES,
  RECORD_BYTES,
  RINGS,
  TOTALS_LENGTH,
  WAIT_BINS_AT,
  addRing,
  binOf,
  emptyPeriods,
  emptyRecord,
  headerBytes,
  isHistoryHeader,
  historyTotals,
  periodStart,
  recordAt,
  recordBytes,
  seriesOf,
  slotOffset,
  totalsOf,
  type HistoryRange,
  type HistoryRecord,
  type HistorySeries,
  type HistoryTotals,
} from '../domain/history-layout.js';
import { idTimeMs } from '../domain/ids.js';
import type { Logger } from '../lib/logger.js';
import type { QueEntry } from '../store/que-index.js';

/** How long news may wait in memory before it is written (RQ_HISTORY_FLUSH_MS). */
const FLUSH_MS = Number(process.env['RQ_HISTORY_FLUSH_MS'] ?? 60_000);

export class QueueHistory {
  private readonly file: string;
  private loaded = false;
  /** done, err, wait sum, run sum, wait bins, run bins (domain/history-layout.ts). */
  private totals: Float64Array = new Float64Array(TOTALS_LENGTH);
  /** The records of the current minute, 10 minutes and hour, in RANGES order. */
  private current: HistoryRecord[] = [];
  /** Something was counted since the last write. */
  private news = false;
  private writtenAt = 0;
  private failed = false;

  private readonly log: Logger;

  constructor(dir: string, log: Logger) {
    this.file = path.join(dir, HISTORY_FILE);
    this.log = log;
  }

  /** A message reached done or err. */
  finished(state: 'done' | 'err', nowMs = Date.now()): void {
    const col = state === 'done' ? 1 : 2;
    for (const r of this.at(nowMs)) r[col]! += 1;
    this.totals[col - 1]! += 1;
    this.news = true;
  }

  /** A run or a lease started, `waitMs` after its message was ready. */
  started(waitMs: number, nowMs = Date.now()): void {
    this.time(0, Math.max(0, waitMs), nowMs);
  }

  /** A run or a lease ended after `seconds`. */
  ran(seconds: number, nowMs = Date.now()): void {
    this.time(1, seconds * 1000, nowMs);
  }

  /** Once a second: `waiting` messages now; ends the minute when it is over, and writes what is due. */
  tick(waiting: number, nowMs = Date.now()): void {
    const records = this.at(nowMs);
    if (waiting > records[0]![3]!) {
      for (const r of records) r[3] = Math.max(r[3]!, waiting);
      this.news = true;
    }
    if (this.news && nowMs - this.writtenAt >= FLUSH_MS) this.flush(nowMs);
  }

  /** Write the totals and the current records, if anything came since the last write. */
  flush(nowMs = Date.now()): void {
    if (!this.news) return;
    this.news = false;
    this.writtenAt = nowMs;
    let fd: number | undefined;
    try {
      fd = openForWrite(this.file);
      fs.writeSync(fd, headerBytes(this.totals), 0, HEADER_BYTES, 0);
      RANGES.forEach((range, i) => {
        const r = this.current[i]!;
        fs.writeSync(fd!, recordBytes(r), 0, RECORD_BYTES, slotOffset(range, r[0]!));
      });
      this.failed = false;
    } catch (e) {
      if (!this.failed) this.log.warn({ file: this.file, err: coerceError(e).message }, 'cannot write the queue history; counting on in memory');
      this.failed = true;
      this.news = true;
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }

  /** The totals since the file began, as `stats` and `/metrics` show them. */
  totalsNow(): HistoryTotals {
    this.load(Date.now());
    return historyTotals(this.totals);
  }

  /** A range's series: the ring from the file, the current period from memory. */
  series(range: HistoryRange, nowMs = Date.now()): HistorySeries {
    const records = this.at(nowMs);
    const periods = emptyPeriods(range, nowMs);
    const ring = RINGS[range];
    addRing(periods, range, readAt(this.file, ring.offset, ring.slots * RECORD_BYTES));
    periods[periods.length - 1] = records[RANGES.indexOf(range)]!;
    return seriesOf(range, periods);
  }

  private time(which: 0 | 1, ms: number, nowMs: number): void {
    const bin = WAIT_BINS_AT + which * BINS + binOf(ms);
    for (const r of this.at(nowMs)) r[bin]! += 1;
    this.totals[2 + which]! += ms / 1000;
    this.totals[bin]! += 1;
    this.news = true;
  }

  /** The current records at `nowMs`: a period that ended is written (if it saw anything) and a new one begun. */
  private at(nowMs: number): HistoryRecord[] {
    this.load(nowMs);
    const minute = Math.floor(nowMs / 60_000);
    if (this.current[0]![0] === minute) return this.current;
    this.flush(nowMs);
    this.current = RANGES.map((range, i) => {
      const start = periodStart(range, minute);
      const r = this.current[i]!;
      if (r[0] === start) return r;
      return emptyRecord(start);
    });
    return this.current;
  }

  /**
   * Read the file once: the totals, and the current periods' records to count on from. A
   * file that cannot be read is logged and counted afresh (and overwritten at the next
   * write): the runs that count must never fail for it.
   */
  private load(nowMs: number): void {
    if (this.loaded) return;
    this.loaded = true;
    this.writtenAt = nowMs;
    const minute = Math.floor(nowMs / 60_000);
    this.current = RANGES.map((range) => emptyRecord(periodStart(range, minute)));
    try {
      const header = readAt(this.file, 0, HEADER_BYTES);
      // No file (most queues of a host, at their first `stats`: one failed open, no more), or not one of ours.
      if (!isHistoryHeader(header)) return;
      this.totals = totalsOf(header);
      this.current = this.current.map((empty, i) => {
        const r = recordAt(readAt(this.file, slotOffset(RANGES[i]!, empty[0]!), RECORD_BYTES), 0);
        return r[0] === empty[0] ? r : empty;
      });
    } catch (e) {
      this.log.warn({ file: this.file, err: coerceError(e).message }, 'cannot read the queue history; counting from zero');
    }
  }
}

/** How long a message waited before its run or lease: since it was made, or since it was due if later. */
export function waitedMs(entry: QueEntry, nowMs = Date.now()): number {
  return nowMs - Math.max(idTimeMs(entry.id) ?? nowMs, entry.dueMs);
}

/** The file open for positioned writes; made if missing, at its full size (a hole until written). */
function openForWrite(file: string): number {
  try {
    return fs.openSync(file, 'r+');
  } catch (e) {
    if (errnoCode(e) !== 'ENOENT') throw e;
    const fd = fs.openSync(file, 'w+', 0o644);
    fs.ftruncateSync(fd, HISTORY_FILE_BYTES);
    return fd;
  }
}

/** `length` bytes at `offset` of a file (fewer at its end; none when it is missing). */
function readAt(file: string, offset: number, length: number): Buffer {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return Buffer.alloc(0);
    throw e;
  }
  try {
    const buf = Buffer.alloc(length);
    const n = fs.readSync(fd, buf, 0, length, offset);
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}
