/**
 * Reads of many messages, for the web: the `messages` pages of a state and `search`. Both
 * go through memory: pages (offset, limit) are slices of the in-memory lists, and a search
 * checks what memory knows before it reads any file. done and relayed are walked in the
 * hashed tree, only as far as the caller reads, except by a whole scan (everyListed) when
 * every message of the state has a finished record (finished-records.ts).
 */
import { PARAM_KEYS, type Message } from '../domain/message.js';
import { SEARCH_ORDER, type State } from '../domain/states.js';
import { BigParam, type QueEntry } from '../store/que-index.js';
import { readMoving, statusText, viewOf, type MessageView } from './lookup.js';
import type { FinishedRecord } from './finished-records.js';
import type { QueueState, RunEntry } from './state.js';

/** A search lets other events in after this many file reads. */
const SEARCH_READS_PER_TURN = 256;
/** The fields of a read view where `search` looks for its free text. */
const TEXT_FIELDS: readonly string[] = ['msg_id', ...PARAM_KEYS, 'status'];

export interface SearchQuery {
  /** Field of the read view → text; a message matches when every pair does. */
  query: Readonly<Record<string, string>>;
  /** Pairs are matched exactly, not as substrings (the free text is always a substring). */
  exact: boolean;
  /** Free text: a substring of the id, of a param (see fieldMatches) or of the status text. */
  text?: string | undefined;
  states: readonly State[];
  /** Matches to skip, then at most `limit` returned. */
  offset: number;
  limit: number;
}

export interface SearchResult {
  messages: MessageView[];
  /** Messages looked at, from memory or from their files. */
  scanned: number;
  /** The scan stopped at `limit` before looking at every message: more may match. */
  truncated: boolean;
}

/** An entry of RQ's `messages` reply (and, paged, its status text). */
export interface ListingRow {
  msg_id: string;
  due?: unknown;
  dest?: unknown;
  status?: string;
  new_msg?: string;
}

/** One message of a state's listing, with what memory holds of it. */
export interface Listed {
  id: string;
  /** Its que index entry (que, and the duplicates held aside). */
  entry?: QueEntry;
  /** Its run entry, which holds the whole message. */
  run?: RunEntry;
}

/** A field of a read view that a que index entry does not hold. */
const NOT_IN_ENTRY = Symbol('not in the index entry');

/**
 * A field of a message's read view from its que index entry (`dest`, `due`) or its
 * finished record, and from either the params but big ones, and `src` when known and not big.
 */
function entryField(known: QueEntry | FinishedRecord, field: string): unknown {
  const isEntry = 'dueMs' in known;
  if (isEntry && field === 'dest') return known.dest;
  if (isEntry && field === 'due') return known.due;
  const param = (PARAM_KEYS as readonly string[]).indexOf(field);
  const srcKnown = field === 'src' && (!isEntry || known.count !== undefined);
  const value = param >= 0 ? known.params[param] : srcKnown ? known.src : NOT_IN_ENTRY;
  return value instanceof BigParam ? NOT_IN_ENTRY : value;
}

/**
 * RQ's search match. Exact: equal to the text (Ruby's `==`, so a
 * number or null never equals it). Otherwise: present and not null, and containing the
 * text. RQ answered 500 for a substring query on a non-string field; here a non-string
 * is matched on its JSON text (`"due": 1795238778` contains `"1795"`).
 */
function fieldMatches(value: unknown, text: string, exact: boolean): boolean {
  if (exact) return value === text;
  if (value === undefined || value === null) return false;
  return (typeof value === 'string' ? value : JSON.stringify(value)).includes(text);
}

/**
 * The `messages` reply for a state, from `offset` on, at most
 * `limit` entries. A paged call (`withStatus`) adds each message's status text.
 */
export function messages(s: QueueState, state: State, offset: number, limit: number, withStatus: boolean): ListingRow[] {
  return Array.from(listing(s, state, offset, limit), (item) => {
    const row = listingRow(s, state, item);
    return withStatus ? { ...row, status: statusText(s, state, item.id) } : row;
  });
}

/**
 * A state's messages in `messages` order, from `offset` on, at most `limit`: slices of
 * memory for prep, que (without the held duplicates), run and err; for done and
 * relayed the hashed tree, walked only as far as the caller reads.
 */
export function listing(s: QueueState, state: State, offset: number, limit: number): Iterable<Listed> {
  switch (state) {
    case 'prep':
      return s.prep.slice(offset, offset + limit).map((id) => ({ id }));
    case 'que':
      return s.que.slice(offset, limit).map((entry) => ({ id: entry.id, entry }));
    case 'run':
      return [...s.run.values()]
        // A finished run whose directory is already in done/ or relayed/ (its commit
        // still syncing) is listed there, from disk, and not here too.
        .filter((run) => !(run.finishing && (s.store.exists('done', run.id) || s.store.exists('relayed', run.id))))
        .reverse()
        .slice(offset, offset + limit)
        .map((run) => ({ id: run.id, run }));
    case 'err':
      return s.errIds.descending(offset, limit).map((id) => ({ id }));
    case 'done':
    case 'relayed':
      return hashedListing(s, state, offset, limit);
  }
}

function* hashedListing(s: QueueState, state: State, offset: number, limit: number): Generator<Listed> {
  if (limit <= 0) return;
  let n = 0;
  for (const id of s.store.hashedIds(state, offset)) {
    yield { id };
    if (++n >= limit) return;
  }
}

/** An entry of RQ's `messages` reply; only relayed reads files (its dest and status). */
function listingRow(s: QueueState, state: State, { id, entry, run }: Listed): ListingRow {
  switch (state) {
    case 'que':
      return { msg_id: id, due: entry?.due, dest: entry?.dest };
    case 'run':
      return { msg_id: id, status: run?.jobStatus ?? 'run', dest: run?.msg.dest };
    case 'relayed': {
      let dest: unknown = null;
      try {
        dest = s.store.readMsg('relayed', id).dest;
      } catch {
        // shown without dest
      }
      const text = s.store.readStatus('relayed', id)?.job_status ?? '';
      return { msg_id: id, status: 'relayed', dest, new_msg: text.split(/\s+/).filter(Boolean).pop() ?? '' };
    }
    default:
      return { msg_id: id };
  }
}

/**
 * search (RQ's `GET /search`): the read views of the messages that
 * match every query pair (see fieldMatches) and, given a free text, hold it in their id,
 * a param or their status text; visiting the states in SEARCH_ORDER, each in its
 * `messages` order; `offset` matches are skipped, then at most `limit` kept. Views carry
 * no `_attachments`: hashing every attachment would make a search as slow as the queue
 * is big.
 *
 * Fast on a big queue: a state is listed only when the scan reaches it (see
 * everyListed), a message that memory shows cannot hold the free text is passed over
 * (textInMemory), and each field is taken from memory when memory has it (lazyView,
 * from a que index entry or a finished record), so a file is read only for a field
 * memory lacks, or for a match past the offset. A waiting message's status text is in
 * memory when its entry knows it has no status file (it never ran); a resent one keeps
 * the status file its run wrote, across restarts too, and that is read. A message that moves on to a later
 * state during the scan is matched once. A match whose `msg` cannot be read is counted
 * but not shown, so pages never overlap. The scan stops at `limit` matches and lets
 * other events in every SEARCH_READS_PER_TURN file reads.
 */
export async function search(s: QueueState, q: SearchQuery): Promise<SearchResult> {
  const pairs = Object.entries(q.query);
  const { text } = q;
  const found: MessageView[] = [];
  const matched = new Set<string>();
  /** Matches past the offset: a page is `limit` matches, whether or not each can be shown. */
  let taken = 0;
  let scanned = 0;
  let reads = 0;
  for (const state of SEARCH_ORDER.filter((st) => q.states.includes(st))) {
    for (const item of searchListing(s, state)) {
      if (taken >= q.limit) return { messages: found, scanned, truncated: true };
      if (matched.has(item.id)) continue;
      scanned++;
      if (text !== undefined && textInMemory(s, state, item, text) === false) continue;
      const view = lazyView(s, state, item);
      try {
        const isMatch =
          pairs.every(([f, value]) => fieldMatches(view.field(f), value, q.exact)) &&
          (text === undefined || TEXT_FIELDS.some((f) => fieldMatches(view.field(f), text, false)));
        if (isMatch) {
          matched.add(item.id);
          if (matched.size > q.offset) {
            taken++;
            found.push(view.whole());
          }
        }
      } catch {
        // moved on since the listing was taken, or unreadable: not shown
      }
      reads += view.reads;
      if (reads >= SEARCH_READS_PER_TURN) {
        reads = 0;
        await new Promise((r) => setImmediate(r));
      }
    }
  }
  return { messages: found, scanned, truncated: false };
}

/**
 * Every message of a state in `messages` order: done and relayed from their finished
 * records when every one of them has one (no directory is listed), else from the tree.
 * A finished run whose directory is already there (its commit still syncing, so not yet
 * recorded, and no longer listed in run) comes first.
 */
export function everyListed(s: QueueState, state: State): Iterable<Listed> {
  if ((state === 'done' || state === 'relayed') && s.finished.size(state) === s.counts[state]) {
    const arriving = [...s.run.values()].filter((run) => run.finishing && s.finished.get(run.id) === undefined && s.store.exists(state, run.id));
    return [...arriving.map((run) => ({ id: run.id })), ...s.finished.ids(state).map((id) => ({ id }))];
  }
  return listing(s, state, 0, Infinity);
}

/**
 * Whether the free text is in a message's id, a param or its status text, from memory
 * alone (its que index entry or finished record); undefined when memory lacks one of them
 * (a big param, a status file it may have). Lets a search pass over a message that
 * cannot match without making its view.
 */
function textInMemory(s: QueueState, state: State, { id, entry }: Listed, text: string): boolean | undefined {
  const rec = entry === undefined && (state === 'done' || state === 'relayed' || state === 'err') ? s.finished.get(id) : undefined;
  const known = entry ?? (rec?.state === state ? rec : undefined);
  if (known === undefined) return undefined;
  if (id.includes(text)) return true;
  let unknown = false;
  for (const p of known.params) {
    if (p instanceof BigParam) unknown = true;
    else if (fieldMatches(p, text, false)) return true;
  }
  const status = entry?.noStatus ? state : rec?.line !== undefined ? `${state} - ${rec.line}` : undefined;
  if (status === undefined) return undefined;
  return status.includes(text) ? true : unknown ? undefined : false;
}

/** A state's listing for `search`: que also has the duplicates held aside, after the list. */
function* searchListing(s: QueueState, state: State): Generator<Listed> {
  yield* everyListed(s, state);
  if (state === 'que') for (const entry of [...s.held.values()].flat()) yield { id: entry.id, entry };
}

/**
 * A message's read view, built only as far as `search` asks: a field from memory when
 * memory has it (the id, state and path; dest, due and the params of an index entry
 * but a big one, which only `msg` holds; all of a running message), else from `msg`,
 * read once; the status text when asked for. `reads` counts the files read. Own fields
 * only: `constructor` is not a field.
 */
function lazyView(s: QueueState, listed: State, { id, entry, run }: Listed): { field(f: string): unknown; whole(): MessageView; readonly reads: number } {
  let state = listed;
  let msg = run?.msg;
  /** The status text, and the state it was read for (a read one move on changes the state). */
  let status: { state: State; text: string } | undefined;
  let reads = 0;
  const msgOf = (): Message => {
    if (msg === undefined) {
      reads++;
      [state, msg] = readMoving(s, state, id);
    }
    return msg;
  };
  const rec = listed === 'done' || listed === 'relayed' || listed === 'err' ? s.finished.get(id) : undefined;
  const statusOf = (): string => {
    if (status?.state !== state) {
      // Memory knows it when it has no status file (its que entry says so) or its record kept its line.
      if (state === 'que' && entry?.noStatus) status = { state, text: state };
      else if (rec?.state === state && rec.line !== undefined) status = { state, text: `${state} - ${rec.line}` };
      else {
        reads++;
        status = { state, text: statusText(s, state, id) };
      }
    }
    return status.text;
  };
  return {
    get reads() {
      return reads;
    },
    field: (f) => {
      if (f === 'msg_id') return id;
      if (f === 'state') return state;
      if (f === 'path') return s.layout.displayPath(state, id);
      if (f === 'status') return statusOf();
      const inMemory = entry ?? (rec?.state === state ? rec : undefined);
      const known = msg === undefined && inMemory !== undefined ? entryField(inMemory, f) : NOT_IN_ENTRY;
      if (known !== NOT_IN_ENTRY) return known;
      const m = msgOf();
      return Object.hasOwn(m, f) ? m[f] : undefined;
    },
    // `msg` first: reading it may find the message one move on, and the rest must agree.
    whole: () => {
      const m = msgOf();
      return viewOf(s, state, id, m, statusOf());
    },
  };
}
