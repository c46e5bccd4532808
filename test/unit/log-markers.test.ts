// The marker lines of a message's timeline.log (RQ START, STATUS, EXIT, WEBHOOK): written in
// the format of stdio.log's start marker and read back with their time, and never from a
// line that only looks like one in part.
import { describe, expect, it } from 'vitest';
import { localTimestamp } from '../../src/lib/local-time.js';
import { markerLine, parseMarker } from '../../src/lib/log-markers.js';

describe('log markers', () => {
  it('reads back what it writes: pid, word, text and the time to the second', () => {
    const at = new Date('2026-11-27T08:16:15.734Z');
    const line = markerLine(30955, 'STATUS', 'run step one', at);
    expect(line).toBe(`30955 - ${localTimestamp(at)} - RQ STATUS - run step one\n`);
    expect(parseMarker(line.trimEnd())).toEqual({ pid: 30955, at: Date.parse('2026-11-27T08:16:15Z'), time: localTimestamp(at), word: 'STATUS', text: 'run step one' });
  });

  it('keeps one fact on one line', () => {
    expect(markerLine(1, 'STATUS', 'a\r\nb\nc', new Date(0)).split('\n')).toHaveLength(2);
  });

  it('reads the time with its UTC offset', () => {
    expect(parseMarker('7 - 2026-11-21 05:27:44 +0130 - RQ EXIT - code 0 - ran 12 ms')?.at).toBe(Date.parse('2026-11-21T03:57:44Z'));
    expect(parseMarker('7 - 2026-11-21 05:27:44 -0800 - RQ START - /x.sh')?.at).toBe(Date.parse('2026-11-21T13:27:44Z'));
  });

  it('finds a marker only in a whole line of one', () => {
    expect(parseMarker('42 - 2026-11-21 05:27:44 +0000 - RQ STATUS - run waiting')).toMatchObject({ pid: 42, word: 'STATUS', text: 'run waiting' });
    expect(parseMarker('partial line... 42 - 2026-11-21 05:27:44 +0000 - RQ STATUS - run waiting')).toBeUndefined();
    expect(parseMarker('42 - 2026-11-21 05:27:44 +0000 - RQ SOMETHING - x')).toBeUndefined();
    expect(parseMarker('plain output - RQ STATUS - x')).toBeUndefined();
  });
});
