// The history file's arithmetic (domain/history-layout.ts): the log-2 bins, the slots
// of the three rings, a ring read back into its periods, the percentiles from bins, and
// the Prometheus buckets of the totals.
import { describe, expect, it } from 'vitest';
import * as H from '../../src/domain/history-layout.js';

const { BINS, HISTORY_FILE_BYTES, RECORD_BYTES, RINGS, TOTALS_LENGTH, WAIT_BINS_AT, addRing, binOf, emptyPeriods, emptyRecord, headerBytes, historyTotals, percentile, recordBytes, seriesOf, slotOffset, totalsOf } = H;

describe('the history file layout', () => {
  it('is 77,888 bytes: a 512-byte header and 372 records of 208 bytes', () => {
    expect(RECORD_BYTES).toBe(208);
    expect(HISTORY_FILE_BYTES).toBe(512 + (60 + 144 + 168) * 208);
    expect(HISTORY_FILE_BYTES).toBe(77_888);
  });

  it('puts a time in the power-of-two bin of milliseconds that holds it, a bound included', () => {
    expect([0, 1, 1.5, 2, 3, 4, 1000, 1024, 1025].map(binOf)).toEqual([0, 0, 1, 1, 2, 2, 10, 10, 11]);
    expect(binOf(2 ** 22)).toBe(22);
    expect(binOf(2 ** 22 + 1)).toBe(BINS - 1);
    expect(binOf(1e12)).toBe(BINS - 1);
  });

  it('finds a period in slot (start / minutes) mod slots of its ring', () => {
    expect(slotOffset('hour', 60)).toBe(RINGS.hour.offset);
    expect(slotOffset('hour', 61)).toBe(RINGS.hour.offset + RECORD_BYTES);
    expect(slotOffset('day', 1440)).toBe(RINGS.day.offset);
    expect(slotOffset('day', 1450)).toBe(RINGS.day.offset + RECORD_BYTES);
    expect(slotOffset('week', 60 * 169)).toBe(RINGS.week.offset + RECORD_BYTES);
  });

  it('reads back from a ring the periods it still holds, and no older one in the same slot', () => {
    const nowMs = 1_800_000_000_000;
    const minute = Math.floor(nowMs / 60_000);
    const ring = Buffer.alloc(RINGS.hour.slots * RECORD_BYTES);
    const put = (start: number, done: number): void => {
      const r = emptyRecord(start);
      r[1] = done;
      recordBytes(r).copy(ring, slotOffset('hour', start) - RINGS.hour.offset);
    };
    put(minute - 1, 5);
    put(minute - 59, 7);
    // Older periods, in the slots of minute - 2 and of the current minute: not theirs.
    put(minute - 62, 9);
    put(minute - 120, 11);
    const periods = emptyPeriods('hour', nowMs);
    addRing(periods, 'hour', ring);
    const s = seriesOf('hour', periods);
    expect(s.points).toHaveLength(60);
    expect(s.points.at(-1)).toMatchObject({ t: minute * 60, done: 0 });
    expect(s.points.at(-2)!.done).toBe(5);
    expect(s.points.at(-3)!.done).toBe(0);
    expect(s.points[0]!.done).toBe(7);
    expect(s.summary.done).toBe(12);
  });

  it('interpolates a percentile inside its bin, and has none without times', () => {
    const r = emptyRecord(0);
    expect(percentile(r, WAIT_BINS_AT, 0.5)).toBeNull();
    r[WAIT_BINS_AT + binOf(100)] = 10; // 10 times in (64, 128] ms
    const p50 = percentile(r, WAIT_BINS_AT, 0.5)!;
    expect(p50).toBeGreaterThan(0.064);
    expect(p50).toBeLessThanOrEqual(0.128);
    expect(p50).toBeCloseTo(0.096);
  });

  it('keeps the totals in its header, and gives them as Prometheus buckets', () => {
    const t = new Float64Array(TOTALS_LENGTH);
    t[0] = 4;
    t[1] = 2;
    t[3] = 1.5;
    t[4 + BINS + binOf(200)] = 3;
    t[4 + BINS + binOf(5000)] = 1;
    const back = totalsOf(headerBytes(t));
    expect([...back]).toEqual([...t]);
    expect(totalsOf(Buffer.alloc(512))[0]).toBe(0);
    const h = historyTotals(back);
    expect(h).toMatchObject({ done: 4, err: 2, run_seconds: { sum: 1.5, count: 4 } });
    expect(h.run_seconds.buckets).toMatchObject({ '0.001': 0, '0.256': 3, '4.096': 3, '16.384': 4, '+Inf': 4 });
    expect(Object.keys(h.wait_seconds.buckets)).toHaveLength(13);
  });
});
