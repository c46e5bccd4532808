/**
 * The layout of a queue's history file, `queues/<q>/history.bin`, and the series made of
 * it: pure byte arithmetic, shared by the queue process (queue/history.ts, its only
 * writer) and the readers (the `history` command, the web's host-wide page). The file
 * has a fixed size and layout, little-endian, so it can be read without rq:
 *
 * | offset | bytes  | what                                                               |
 * | ------ | ------ | ------------------------------------------------------------------ |
 * | 0      | 8      | `RQHIST1\n`                                                        |
 * | 8      | 416    | totals since the file began, 52 float64: done, err, wait seconds summed, run seconds summed, 24 wait bins, 24 run bins |
 * | 424    | 88     | zero (reserved)                                                    |
 * | 512    | 12,480 | the minute ring: 60 records, one a minute (an hour)                |
 * | 12,992 | 29,952 | the 10-minute ring: 144 records (a day)                            |
 * | 42,944 | 34,944 | the hour ring: 168 records (a week)                                |
 *
 * 77,888 bytes in all. A record (208 bytes, 52 uint32) is the period's first minute
 * (minutes since the epoch; 0 for a slot never written), done, err, the most messages
 * seen waiting, then 24 wait bins and 24 run bins. A period of N minutes starting at
 * minute m is in slot (m / N) mod slots of its ring; a slot whose first minute is not the
 * one expected holds an older period and counts as empty.
 *
 * The bins are powers of two of milliseconds: bin 0 holds times up to 1 ms, bin i
 * (1..22) times over 2^(i-1) and up to 2^i ms, bin 23 everything over 2^22 ms (70
 * minutes). A percentile is interpolated inside its bin, so it is exact to within the
 * bin: a factor of 2.
 */

export const HISTORY_FILE = 'history.bin';
export const HISTORY_MAGIC = 'RQHIST1\n';
/** Log-2 bins of milliseconds (see above). */
export const BINS = 24;
/** done, err, wait sum, run sum, then the wait and the run bins. */
export const TOTALS_LENGTH = 4 + 2 * BINS;
export const HEADER_BYTES = 512;
/** uint32 per record: first minute, done, err, waiting, wait bins, run bins. */
export const RECORD_LENGTH = 4 + 2 * BINS;
export const RECORD_BYTES = RECORD_LENGTH * 4;
/** Where the wait and the run bins start, in a record and in the totals alike. */
export const WAIT_BINS_AT = 4;
const REC_WAIT = WAIT_BINS_AT;
const REC_RUN = WAIT_BINS_AT + BINS;

export const RANGES = ['hour', 'day', 'week'] as const;
export type HistoryRange = (typeof RANGES)[number];

/** Each range's ring: its period in minutes and its slots, in file order. */
export const RINGS: Record<HistoryRange, { minutes: number; slots: number; offset: number }> = {
  hour: { minutes: 1, slots: 60, offset: HEADER_BYTES },
  day: { minutes: 10, slots: 144, offset: HEADER_BYTES + 60 * RECORD_BYTES },
  week: { minutes: 60, slots: 168, offset: HEADER_BYTES + (60 + 144) * RECORD_BYTES },
};
export const HISTORY_FILE_BYTES = RINGS.week.offset + RINGS.week.slots * RECORD_BYTES;

/** The bin of a time in milliseconds. */
export function binOf(ms: number): number {
  return ms <= 1 ? 0 : Math.min(BINS - 1, Math.ceil(Math.log2(ms)));
}

/** The upper bound of bin i in milliseconds (the last bin has none: Infinity). */
export function binUpperMs(i: number): number {
  return i >= BINS - 1 ? Infinity : 2 ** i;
}

/** The first minute of the period of `range` that holds minute `minute`. */
export function periodStart(range: HistoryRange, minute: number): number {
  const n = RINGS[range].minutes;
  return minute - (minute % n);
}

/** The byte offset of the slot that holds the period starting at `start`. */
export function slotOffset(range: HistoryRange, start: number): number {
  const ring = RINGS[range];
  return ring.offset + ((start / ring.minutes) % ring.slots) * RECORD_BYTES;
}

/** A record: a Uint32Array of RECORD_LENGTH (see the file comment). */
export type HistoryRecord = Uint32Array;

export function emptyRecord(start: number): HistoryRecord {
  const r = new Uint32Array(RECORD_LENGTH);
  r[0] = start;
  return r;
}

/** Add record `from` into `into` (counts and bins summed, waiting the larger). */
export function addRecord(into: HistoryRecord, from: HistoryRecord): void {
  into[1]! += from[1]!;
  into[2]! += from[2]!;
  into[3] = Math.max(into[3]!, from[3]!);
  for (let i = REC_WAIT; i < RECORD_LENGTH; i++) into[i]! += from[i]!;
}

/** A record's bytes (little-endian) and back. */
export function recordBytes(r: HistoryRecord): Buffer {
  const b = Buffer.alloc(RECORD_BYTES);
  for (let i = 0; i < RECORD_LENGTH; i++) b.writeUInt32LE(r[i]!, i * 4);
  return b;
}
export function recordAt(buf: Buffer, offset: number): HistoryRecord {
  const r = new Uint32Array(RECORD_LENGTH);
  if (offset + RECORD_BYTES > buf.length) return r;
  for (let i = 0; i < RECORD_LENGTH; i++) r[i] = buf.readUInt32LE(offset + i * 4);
  return r;
}

/** The header's bytes for these totals, and the totals of a header (zeros for a file that is not a history file). */
export function headerBytes(totals: Float64Array): Buffer {
  const b = Buffer.alloc(HEADER_BYTES);
  b.write(HISTORY_MAGIC, 0, 'latin1');
  for (let i = 0; i < TOTALS_LENGTH; i++) b.writeDoubleLE(totals[i]!, 8 + i * 8);
  return b;
}
export function totalsOf(header: Buffer): Float64Array {
  const t = new Float64Array(TOTALS_LENGTH);
  if (!isHistoryHeader(header)) return t;
  for (let i = 0; i < TOTALS_LENGTH; i++) t[i] = header.readDoubleLE(8 + i * 8);
  return t;
}
export function isHistoryHeader(header: Buffer): boolean {
  return header.length >= HEADER_BYTES && header.toString('latin1', 0, 8) === HISTORY_MAGIC;
}

/** One point of a series: a period, its counts, and its wait and run percentiles in seconds (null without any). */
export interface HistoryPoint {
  /** The period's start, epoch seconds. */
  t: number;
  done: number;
  err: number;
  waiting: number;
  wait_p50: number | null;
  wait_p95: number | null;
  run_p50: number | null;
  run_p95: number | null;
}

/** A range's series: points oldest first, each `step` seconds long, and the whole range as one point. */
export interface HistorySeries {
  range: HistoryRange;
  step: number;
  points: HistoryPoint[];
  summary: HistoryPoint;
}

/** The periods of a range up to the one holding `nowMs`, oldest first, each empty. */
export function emptyPeriods(range: HistoryRange, nowMs: number): HistoryRecord[] {
  const { minutes, slots } = RINGS[range];
  const last = periodStart(range, Math.floor(nowMs / 60_000));
  return Array.from({ length: slots }, (_, i) => emptyRecord(last - (slots - 1 - i) * minutes));
}

/** Does this machine store a uint32 little-endian, as the file does? (Then a ring is read as it lies.) */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A ring's bytes as uint32 words: a view of them where the machine and the alignment allow, else decoded. */
function wordsOf(ring: Buffer): Uint32Array {
  const n = ring.length >> 2;
  if (LITTLE_ENDIAN && ring.byteOffset % 4 === 0) return new Uint32Array(ring.buffer, ring.byteOffset, n);
  const words = new Uint32Array(n);
  for (let i = 0; i < n; i++) words[i] = ring.readUInt32LE(i * 4);
  return words;
}

/** Add a ring's bytes (the whole ring of `range`, from its first slot) into the periods it still holds. */
export function addRing(periods: HistoryRecord[], range: HistoryRange, ring: Buffer): void {
  const base = RINGS[range].offset;
  const words = wordsOf(ring);
  for (const p of periods) {
    const at = (slotOffset(range, p[0]!) - base) >> 2;
    if (at + RECORD_LENGTH <= words.length && words[at] === p[0]) addRecord(p, words.subarray(at, at + RECORD_LENGTH));
  }
}

/** The value in seconds under which fraction `q` of the times of bins `bins[base..base+BINS)` fall; null without any. */
export function percentile(bins: ArrayLike<number>, base: number, q: number): number | null {
  let total = 0;
  for (let i = 0; i < BINS; i++) total += bins[base + i]!;
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < BINS; i++) {
    const n = bins[base + i]!;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : 2 ** (i - 1);
      if (i === BINS - 1) return lower / 1000;
      return (lower + (binUpperMs(i) - lower) * ((rank - seen) / n)) / 1000;
    }
    seen += n;
  }
  return null;
}

function pointOf(p: HistoryRecord): HistoryPoint {
  return {
    t: p[0]! * 60,
    done: p[1]!,
    err: p[2]!,
    waiting: p[3]!,
    wait_p50: percentile(p, REC_WAIT, 0.5),
    wait_p95: percentile(p, REC_WAIT, 0.95),
    run_p50: percentile(p, REC_RUN, 0.5),
    run_p95: percentile(p, REC_RUN, 0.95),
  };
}

/** The series of these periods (emptyPeriods, filled). */
export function seriesOf(range: HistoryRange, periods: HistoryRecord[]): HistorySeries {
  const all = emptyRecord(periods[0]?.[0] ?? 0);
  for (const p of periods) addRecord(all, p);
  return { range, step: RINGS[range].minutes * 60, points: periods.map(pointOf), summary: pointOf(all) };
}

/** A histogram as Prometheus reads it: cumulative counts by upper bound in seconds (`"+Inf"` last). */
export interface SecondsHistogram {
  sum: number;
  count: number;
  buckets: Record<string, number>;
}

/** The totals a queue keeps across restarts (the `stats` reply's `totals`, and `/metrics`). */
export interface HistoryTotals {
  done: number;
  err: number;
  wait_seconds: SecondsHistogram;
  run_seconds: SecondsHistogram;
}

/** Every other bin's bound is a Prometheus bucket: 0.001 s, 0.004 s … 4194.304 s, and +Inf. */
function histogramOf(totals: Float64Array, base: number, sum: number): SecondsHistogram {
  const buckets: Record<string, number> = {};
  let seen = 0;
  for (let i = 0; i < BINS; i++) {
    seen += totals[base + i]!;
    if (i % 2 === 0 && i < BINS - 1) buckets[String(binUpperMs(i) / 1000)] = seen;
  }
  buckets['+Inf'] = seen;
  return { sum, count: seen, buckets };
}

export function historyTotals(t: Float64Array): HistoryTotals {
  return {
    done: t[0]!,
    err: t[1]!,
    wait_seconds: histogramOf(t, REC_WAIT, t[2]!),
    run_seconds: histogramOf(t, REC_RUN, t[3]!),
  };
}
