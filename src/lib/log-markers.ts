/**
 * Marker lines in the format of RQ's start marker in `job/stdio.log`: `<pid> - <local
 * time> - RQ <WORD> - <text>`. Beyond RQ, rq writes one for each fact of a run that is
 * nowhere else on disk into a file of their own beside the log, `job/timeline.log` (the
 * spawner: START, STATUS, EXIT; the queue: WEBHOOK), one line each, and the message page's
 * timeline reads them back. This file owns the format both ways and the file's name.
 */
import { localTimestamp } from './local-time.js';

/** The file of a message's `job/` directory that holds its markers. */
export const TIMELINE_LOG = 'timeline.log';

/** What a marker records: a run's start, one status-pipe line, its exit, a post-run webhook queued. */
export type MarkerWord = 'START' | 'STATUS' | 'EXIT' | 'WEBHOOK';

export interface Marker {
  pid: number;
  /** Epoch ms, to the second. */
  at: number;
  /** The time as written: `2026-11-21 05:27:44 +0000`. */
  time: string;
  word: MarkerWord;
  text: string;
}

/** The bytes every marker holds, to find candidate lines in a log without decoding it. */
export const MARKER_TAG = ' - RQ ';

/**
 * A marker line at time `at` (its newline included). Line breaks in `text` become spaces,
 * so one fact is one line.
 */
export function markerLine(pid: number, word: MarkerWord, text: string, at = new Date()): string {
  return `${pid} - ${localTimestamp(at)} - RQ ${word} - ${text.replace(/[\r\n]+/g, ' ')}\n`;
}

const MARKER_RE = /^(\d+) - (\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d) - RQ (START|STATUS|EXIT|WEBHOOK) - (.*)$/;

/** The marker in one line of a log, or undefined when it holds none. */
export function parseMarker(line: string): Marker | undefined {
  const m = MARKER_RE.exec(line);
  if (!m) return undefined;
  const n = (i: number): number => Number(m[i]);
  const offsetMin = (m[8] === '-' ? -1 : 1) * (n(9) * 60 + n(10));
  const at = Date.UTC(n(2), n(3) - 1, n(4), n(5), n(6), n(7)) - offsetMin * 60_000;
  const time = `${m[2]}-${m[3]}-${m[4]} ${m[5]}:${m[6]}:${m[7]} ${m[8]}${m[9]}${m[10]}`;
  return { pid: n(1), at, time, word: m[11] as MarkerWord, text: m[12] ?? '' };
}
