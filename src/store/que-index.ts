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
 *
 * A param whose JSON text is over MAX_INDEXED_PARAM_CHARS is not kept, in memory or in
 * the journal: its entry holds a BigParam, a SHA-256 of it, which is all that
 * coalescing and blocking compare; search reads the value from `msg`. A line is
 * `[id, due, dest, params, pull?, more?]`, where `params` is the array of the four params, or,
 * when one of them is big, `{"p": params with null for each big one, "d": their digests
 * with null for the others}`. A reader that expects an array there skips the line and
 * reads that message's `msg` instead, which is right. `more` (`pull` is null when only it
 * is there) holds what the queue page lists without reading `msg`: `{"c": count, "s":
 * src, "n": 1}` (a big src as `{"sd": digest}`; `n`: it has no status file); a line
 * without it (older) leaves them unknown.
 */
import crypto from 'node:crypto';
import { PARAM_KEYS, dueMs, isPlainObject, type Message } from '../domain/message.js';

/** A param whose JSON text is longer than this stays in `msg` only (see BigParam). */
export const MAX_INDEXED_PARAM_CHARS = 1024;

/** A param too big to keep in memory: a SHA-256 of it (hex, see indexedParam) stands for it. */
export class BigParam {
  readonly digest: string;
  constructor(digest: string) {
    this.digest = digest;
  }
}

/** What the scheduler needs of a waiting message, without reading its `msg`. */
export interface QueEntry {
  id: string;
  /** `due` exactly as stored (RQ keeps strings as strings). */
  due: unknown;
  dueMs: number;
  dest: unknown;
  /** param1..param4, `null` when absent, a BigParam when big. */
  params: readonly unknown[];
  /** Pull messages only (queue/pull-messages.ts): the ready order (see que-list.ts) and the TTL. */
  pull?: PullOrder;
  /** Its `count` (resends so far). Undefined: unknown (an older journal line). */
  count?: number;
  /** Known to have no status file (it came to que from prep or straight from its creation, so it never ran). */
  noStatus?: true;
  /** Its `src`, a BigParam when big; undefined when it has none or it is unknown (then `count` is unknown too). */
  src?: unknown;
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

/** The SHA-256 (hex) of the texts, one after the other. */
function sha256(...texts: string[]): string {
  const hash = crypto.createHash('sha256');
  for (const text of texts) hash.update(text);
  return hash.digest('hex');
}

/**
 * A param as memory keeps it: itself, or a BigParam when its JSON text is too long. The
 * digest is of the JSON text, but a string's is of the string itself after an `s`, so
 * that a big string is not copied into its JSON text only to be hashed (no JSON text
 * starts with `s`, so a string never gets the digest of another value).
 */
export function indexedParam(p: unknown): unknown {
  if (p === null || p instanceof BigParam || typeof p === 'number' || typeof p === 'boolean') return p;
  if (typeof p === 'string') {
    // Its JSON text has its quotes, and 1 to 6 characters per character.
    if (p.length * 6 + 2 <= MAX_INDEXED_PARAM_CHARS) return p;
    if (p.length + 2 <= MAX_INDEXED_PARAM_CHARS && JSON.stringify(p).length <= MAX_INDEXED_PARAM_CHARS) return p;
    return new BigParam(sha256('s', p));
  }
  const text = JSON.stringify(p);
  return text.length <= MAX_INDEXED_PARAM_CHARS ? p : new BigParam(sha256(text));
}

export function compactParams(params: readonly unknown[]): readonly unknown[] {
  if (params.every((p) => p === null)) return NO_PARAMS;
  let indexed: unknown[] | undefined;
  for (const [i, p] of params.entries()) {
    const kept = indexedParam(p);
    if (kept !== p) (indexed ??= [...params])[i] = kept;
  }
  return indexed ?? params;
}

/** The params of a journal line (see the file comment), or undefined when they are not there. */
export function lineParams(value: unknown): unknown[] | undefined {
  if (Array.isArray(value)) return value as unknown[];
  if (!isPlainObject(value) || !Array.isArray(value['p']) || !Array.isArray(value['d'])) return undefined;
  const digests = value['d'];
  return value['p'].map((p: unknown, i) => (typeof digests[i] === 'string' ? new BigParam(digests[i]) : p));
}

/** The params as a journal line holds them (see the file comment). */
export function journalParams(params: readonly unknown[]): unknown {
  if (!params.some((p) => p instanceof BigParam)) return params;
  return { p: params.map((p) => (p instanceof BigParam ? null : p)), d: params.map((p) => (p instanceof BigParam ? p.digest : null)) };
}

/** The entry of `msg`; `fresh`: it never ran (it has no status file). */
export function entryFromMessage(msg: Message, fresh = false): QueEntry {
  const pull = pullOrder(msg);
  return {
    id: msg.msg_id,
    due: msg.due,
    dueMs: dueMs(msg),
    dest: msg.dest,
    params: compactParams(PARAM_KEYS.map((k) => msg[k] ?? null)),
    ...(pull ? { pull } : {}),
    ...moreOf(msg.count, msg.src),
    ...(fresh ? { noStatus: true as const } : {}),
  };
}

/** The `count` and `src` of an entry, when the count is a whole number (else both stay unknown). */
function moreOf(count: unknown, src: unknown): Pick<QueEntry, 'count' | 'src'> {
  if (typeof count !== 'number' || !Number.isSafeInteger(count)) return {};
  return src === undefined || src === null ? { count } : { count, src: indexedParam(src) };
}

/** An entry's `more` element of a journal line (see the file comment), or undefined when unknown. */
function journalMore(e: QueEntry): unknown {
  if (e.count === undefined) return undefined;
  return {
    c: e.count,
    ...(e.src !== undefined ? { s: e.src instanceof BigParam ? { sd: e.src.digest } : e.src } : {}),
    ...(e.noStatus ? { n: 1 } : {}),
  };
}

/** The `count`, `src` and `noStatus` of a journal line's `more` element. */
function lineMore(more: unknown): Pick<QueEntry, 'count' | 'src' | 'noStatus'> {
  if (!isPlainObject(more)) return {};
  const src = more['s'];
  const known = moreOf(more['c'], isPlainObject(src) && typeof src['sd'] === 'string' ? new BigParam(src['sd']) : src);
  return known.count !== undefined && more['n'] === 1 ? { ...known, noStatus: true } : known;
}

export function journalLine(e: QueEntry): string {
  const params = journalParams(e.params);
  const more = journalMore(e);
  const line = more !== undefined ? [e.id, e.due, e.dest, params, e.pull ?? null, more] : e.pull ? [e.id, e.due, e.dest, params, e.pull] : [e.id, e.due, e.dest, params];
  return `${JSON.stringify(line)}\n`;
}

/** The entry of an index line (an array, see the file comment), or undefined when it is not one. */
export function entryOfLine(line: unknown[]): QueEntry | undefined {
  const [id, due, dest, given, pull, more] = line as [unknown, unknown, unknown, unknown, PullOrder | null | undefined, unknown];
  const params = lineParams(given);
  if (typeof id !== 'string' || !params) return undefined;
  const order = pull && typeof pull === 'object' ? pullOrder({ priority: pull.p, rank: pull.r, sort_key: pull.k, expires_at: pull.e }) : undefined;
  return { id, due, dueMs: dueMs({ due }), dest, params: compactParams(params), ...(order ? { pull: order } : {}), ...lineMore(more) };
}
