/**
 * The durable index of `que/`: a journal of JSON lines, one per message entering `que`
 * (commit, requeue, due change), appended and fsynced by the same group commit as the
 * rename it describes, so it is never older than the directory it indexes.
 *
 * It is only a cache. At start-up the listing of `que/` is the truth: an indexed id that
 * is not listed is gone; a listed id that is not indexed (an operator dropped it in by
 * hand, or a run/ message was moved back) is read from its `msg`. The journal is
 * rewritten compactly (tmp, fsync, rename) at start-up and when it grows too long.
 * Reading 100,000 entries from one file takes a fraction of the 16 s a cold parse of
 * 100,000 `msg` files takes.
 */
import fs from 'node:fs';
import { PARAM_KEYS, dueMs, type Message } from '../domain/message.js';
import { writeFileDurably } from './atomic.js';

/** What the scheduler needs of a waiting message, without reading its `msg`. */
export interface QueEntry {
  id: string;
  /** `due` exactly as stored (RQ keeps strings as strings). */
  due: unknown;
  dueMs: number;
  dest: unknown;
  /** param1..param4, `null` when absent. */
  params: readonly unknown[];
  /** Pull messages only (pull.ts): the ready order (see que-list.ts) and the TTL. */
  pull?: PullOrder;
}

/** A pull message's place among ready messages, and when it expires. */
export interface PullOrder {
  /** `priority`: higher first. */
  p: number;
  /** `rank`: instead of the due time, epoch ms. */
  r?: number;
  /** `sort_key`: instead of the id. */
  k?: string;
  /** `expires_at`, epoch ms. */
  e?: number;
}

/** The pull order of a message, or undefined when it has none of those fields. */
function pullOrder(msg: { priority?: unknown; rank?: unknown; sort_key?: unknown; expires_at?: unknown }): PullOrder | undefined {
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const p = num(msg.priority);
  const r = num(msg.rank);
  const k = typeof msg.sort_key === 'string' ? msg.sort_key : undefined;
  const e = num(msg.expires_at);
  if (p === undefined && r === undefined && k === undefined && e === undefined) return undefined;
  return { p: p ?? 0, ...(r !== undefined ? { r } : {}), ...(k !== undefined ? { k } : {}), ...(e !== undefined ? { e } : {}) };
}

/** Most messages have no params: they share one array (100,000 entries stay small). */
const NO_PARAMS: readonly unknown[] = Object.freeze([null, null, null, null]);

function compactParams(params: readonly unknown[]): readonly unknown[] {
  return params.every((p) => p === null) ? NO_PARAMS : params;
}

export function entryFromMessage(msg: Message): QueEntry {
  const pull = pullOrder(msg);
  return {
    id: msg.msg_id,
    due: msg.due,
    dueMs: dueMs(msg),
    dest: msg.dest,
    params: compactParams(PARAM_KEYS.map((k) => msg[k] ?? null)),
    ...(pull ? { pull } : {}),
  };
}

export function journalLine(e: QueEntry): string {
  return `${JSON.stringify(e.pull ? [e.id, e.due, e.dest, e.params, e.pull] : [e.id, e.due, e.dest, e.params])}\n`;
}

/**
 * Read the journal; later lines win. A torn last line (crash mid-append) is skipped.
 * `lines` counts every line, so a caller can tell a compact journal from a stale one.
 */
export function readIndex(file: string): { entries: Map<string, QueEntry>; lines: number } {
  const out = new Map<string, QueEntry>();
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { entries: out, lines: 0 };
  }
  let lines = 0;
  for (const line of text.split('\n')) {
    if (!line) continue;
    lines++;
    try {
      const [id, due, dest, params, pull] = JSON.parse(line) as [string, unknown, unknown, unknown[], PullOrder?];
      if (typeof id === 'string' && Array.isArray(params)) {
        const order = pull && typeof pull === 'object' ? pullOrder({ priority: pull.p, rank: pull.r, sort_key: pull.k, expires_at: pull.e }) : undefined;
        out.set(id, { id, due, dueMs: dueMs({ due }), dest, params: compactParams(params), ...(order ? { pull: order } : {}) });
      }
    } catch {
      // a torn line from a crash mid-append: the listing check repairs it
    }
  }
  return { entries: out, lines };
}

/** Replace the journal with exactly these entries, durably. */
export function writeIndex(file: string, entries: Iterable<QueEntry>): void {
  writeFileDurably(file, chunked(entries));
}

function* chunked(entries: Iterable<QueEntry>): Iterable<string> {
  let chunk = '';
  for (const e of entries) {
    chunk += journalLine(e);
    if (chunk.length > 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk;
}
