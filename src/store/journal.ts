/**
 * The queue's journal, `queues/<q>/que.index`: the commit point of every change to the
 * queue's messages, and the index of `que` (que-index.ts). A change is acknowledged once
 * its record is in this file and the file is fdatasynced (group-commit.ts); the message
 * directories are written in the same batch without fsyncs of their own, and a
 * checkpoint (a syncfs of the filesystem, then a rewrite of this file) makes them
 * durable before the records are cut. Start-up replays the records over the directories
 * (replay.ts). docs/internals/durability.md states the rules.
 *
 * A line is one of:
 * - an index entry, a JSON array (que-index.ts): this message waits in `que` with these
 *   fields. The compact part a checkpoint writes is made of them.
 * - a record, a JSON object `{"id", "to", "m"?, "st"?, "a"?, "n"?, "d"?}`: the message is
 *   now in state `to` (or `"gone"`), with `m` its whole `msg` when the change wrote it
 *   (`null` when it was too big for a record, and made durable in place; an index line
 *   follows it when it entered que),
 *   `st` its job status when written, `a` attachments written (name → base64), `n: 1` when
 *   it never ran (it has no status file), `d: 1` when parts of it were made durable in
 *   place instead (attachments too big for a record, linked ones, an external id).
 *   Without `d`, the records are enough to make the message again from nothing.
 * - an undo, `{"id", "x": 1}`: the last change recorded for this id did not happen (its
 *   rename failed after the record was synced); replay goes by the records before it.
 * - a boot line, `{"boot": "<boot id>"}`, written when a process opens the file: a file
 *   holding another boot's id may have lived through a power cut, and its replay checks
 *   every file a record wrote, not only where the message is.
 *
 * Later lines win. A torn last line (a crash mid-append) is skipped.
 */
import fs from 'node:fs';
import { isPlainObject, type Message } from '../domain/message.js';
import { isState, type State } from '../domain/states.js';
import { writeFileDurably } from './atomic.js';
import { entryFromMessage, entryOfLine, journalLine, type QueEntry } from './que-index.js';

/** Where a record puts its message: a state, or gone for good (deleted, cleaned). */
export type Target = State | 'gone';

/** A record as written: see the file comment. */
export interface JournalRecord {
  id: string;
  to: Target;
  /** null: a `msg` too big for a record was written, fsynced in place. */
  m?: Message | null;
  st?: string | null;
  a?: Record<string, string>;
  n?: 1;
  d?: 1;
}

/** What replay needs of a message: where its last record put it, and the newest of each part. */
export interface Replay {
  to: Target;
  /** The newest `msg` recorded. */
  m?: Message;
  /** Whether a status was recorded, and the newest. */
  st?: { job_status: string | null };
  /** Every attachment recorded, newest content of each name (base64). */
  a?: Record<string, string>;
  /** A record says parts of it were made durable in place, not recorded. */
  inPlace?: true;
  /** What was known before the last record (an undo goes back to it). */
  prev?: Replay;
}

export interface JournalRead {
  /** The index of que: each waiting message's entry. */
  entries: Map<string, QueEntry>;
  /** Lines read. */
  lines: number;
  /** Lines read but boot lines (a compact journal has one per waiting message). */
  entryLines: number;
  /** Records since the last checkpoint, one per message, in the order first seen. */
  records: Map<string, Replay>;
  /** Boot ids of the processes that wrote the file. */
  boots: Set<string>;
}

export function recordLine(r: JournalRecord): string {
  return `${JSON.stringify(r)}\n`;
}

export function undoLine(id: string): string {
  return `${JSON.stringify({ id, x: 1 })}\n`;
}

export function bootLine(boot: string): string {
  return `${JSON.stringify({ boot })}\n`;
}

/** This boot of the machine (Linux), or undefined where the kernel does not say. */
function currentBootId(): string | undefined {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

export const THIS_BOOT = currentBootId();

/** Whether the journal may have lived through a power cut: it was not written in this boot alone. */
export function mayHavePowerCut(read: JournalRead): boolean {
  return THIS_BOOT === undefined || read.boots.size !== 1 || !read.boots.has(THIS_BOOT);
}

const TARGETS = (to: unknown): to is Target => to === 'gone' || isState(to);

/** Fold one record into what replay knows of its message. */
function fold(known: Replay | undefined, r: Record<string, unknown>, to: Target): Replay {
  const next: Replay = { ...known, to, ...(known ? { prev: known } : {}) };
  if (isPlainObject(r['m'])) next.m = r['m'] as unknown as Message;
  else if (r['m'] === null) delete next.m;
  if ('st' in r) next.st = { job_status: typeof r['st'] === 'string' ? r['st'] : null };
  if (isPlainObject(r['a'])) next.a = { ...known?.a, ...(r['a'] as Record<string, string>) };
  if (r['d'] === 1) next.inPlace = true;
  return next;
}

/** Read the journal: the index of que, the records to replay, the boots that wrote it. */
export function readJournal(file: string): JournalRead {
  const read: JournalRead = { entries: new Map(), lines: 0, entryLines: 0, records: new Map(), boots: new Set() };
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return read;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    read.lines++;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // a torn line from a crash mid-append
    }
    if (Array.isArray(value)) {
      read.entryLines++;
      const entry = entryOfLine(value);
      if (entry) read.entries.set(entry.id, entry);
    } else if (isPlainObject(value)) {
      if (typeof value['boot'] === 'string') {
        read.boots.add(value['boot']);
        continue;
      }
      read.entryLines++;
      const id = value['id'];
      if (typeof id !== 'string') continue;
      if (value['x'] === 1) {
        const prev = read.records.get(id)?.prev;
        if (prev) read.records.set(id, prev);
        else read.records.delete(id);
        continue;
      }
      const to = value['to'];
      if (!TARGETS(to)) continue;
      const replay = fold(read.records.get(id), value, to);
      read.records.set(id, replay);
      // A big msg's record has no msg: its index line follows it.
      if (to === 'que' && isPlainObject(value['m'])) read.entries.set(id, entryFromMessage(value['m'] as unknown as Message, value['n'] === 1));
      else if (to !== 'que') read.entries.delete(id);
    }
  }
  return read;
}

/**
 * Replace the journal, durably (a checkpoint's cut): the boot line, an index line per
 * waiting message, then `tail` (the records the checkpoint's sync did not cover).
 */
export function writeJournal(file: string, entries: Iterable<QueEntry>, tail: string): number {
  const lines = { n: 0 };
  writeFileDurably(file, chunked(entries, tail, lines));
  return lines.n;
}

function* chunked(entries: Iterable<QueEntry>, tail: string, lines: { n: number }): Iterable<string> {
  let chunk = THIS_BOOT !== undefined ? bootLine(THIS_BOOT) : '';
  if (chunk) lines.n++;
  lines.n += tail.split('\n').length - 1;
  for (const e of entries) {
    lines.n++;
    chunk += journalLine(e);
    if (chunk.length > 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk + tail;
}
