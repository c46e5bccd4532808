/**
 * The queue page's listing (the `rows` command): one state's messages filtered (by
 * param, src, free text and creation time), sorted (by created, finished or duration)
 * and paged, each row with what a user asks of a message (params, src, created,
 * started, finished, duration, count, exit, status text), and how many match.
 *
 * Every field comes from memory when memory has it: a waiting message's que index entry
 * (params, src, count, and whether it has a status file), a running message's
 * run, a finished message's record (finished-records.ts). Only what memory lacks is read
 * from the files (a big param, a message finished before records were kept), once per
 * message, letting other events in every READS_PER_TURN reads. With no filter and no
 * sort a page is a slice of the state's `messages` order, and looks only at its rows.
 */
import { idTimeMs } from '../domain/ids.js';
import { PARAM_KEYS, type Message } from '../domain/message.js';
import type { State } from '../domain/states.js';
import type { ListRow, RowFilter, RowSort, RowsReply } from '../rpc/queue-api.js';
import { BigParam } from '../store/que-index.js';
import type { FinishedRecord } from './finished-records.js';
import { everyListed, listing, type Listed } from './listings.js';
import { readMoving, statusText } from './lookup.js';
import { numMessages, type QueueState } from './state.js';

/** A listing lets other events in after this many file reads. */
const READS_PER_TURN = 256;
/** A param or src is shown up to this many characters (the filter sees all of it). */
const SHOWN_CHARS = 80;

/** One message of the listing, its fields read from memory first, from its files when memory lacks them. */
class Item {
  reads = 0;
  private msg: Message | undefined;
  private status: string | undefined;
  private readonly rec: FinishedRecord | undefined;
  private readonly s: QueueState;
  private readonly state: State;
  readonly listed: Listed;

  constructor(s: QueueState, state: State, listed: Listed) {
    this.s = s;
    this.state = state;
    this.listed = listed;
    this.msg = listed.run?.msg;
    this.rec = state === 'done' || state === 'relayed' || state === 'err' ? s.finished.get(listed.id) : undefined;
  }

  get id(): string {
    return this.listed.id;
  }

  private msgOf(): Message {
    if (this.msg === undefined) {
      this.reads++;
      this.msg = readMoving(this.s, this.state, this.id)[1];
    }
    return this.msg;
  }

  /** param1..4 (index 0..3). */
  param(i: number): unknown {
    const known = (this.listed.entry ?? this.rec)?.params[i];
    if (known !== undefined && !(known instanceof BigParam) && this.msg === undefined) return known;
    return this.msgOf()[PARAM_KEYS[i]!] ?? null;
  }

  src(): unknown {
    const entry = this.listed.entry;
    const known = entry?.count !== undefined ? (entry.src ?? null) : this.rec ? (this.rec.src ?? null) : undefined;
    if (known !== undefined && !(known instanceof BigParam) && this.msg === undefined) return known;
    return this.msgOf().src ?? null;
  }

  count(): number | null {
    const known = this.listed.entry?.count ?? this.rec?.count ?? this.msg?.count;
    if (known !== undefined && known !== null) return known;
    const c = this.msgOf().count;
    return typeof c === 'number' ? c : null;
  }

  statusText(): string {
    if (this.status !== undefined) return this.status;
    const { state, rec, listed } = this;
    if (listed.entry?.noStatus) this.status = state;
    else if (rec?.line !== undefined) this.status = `${state} - ${rec.line}`;
    else {
      if (!(state === 'run' && listed.run?.hasStatus)) this.reads++;
      this.status = statusText(this.s, state, this.id);
    }
    return this.status;
  }

  /** Where a waiting, running or relayed message goes (a relayed one's is read from its `msg`). */
  dest(): unknown {
    if (this.listed.entry !== undefined && this.msg === undefined) return this.listed.entry.dest ?? null;
    return this.msgOf().dest ?? null;
  }

  created(): number | null {
    return idTimeMs(this.id) ?? null;
  }

  started(): number | null {
    return this.listed.run?.startedAt ?? this.listed.run?.msg.lease?.at ?? this.rec?.started ?? null;
  }

  finished(): number | null {
    return this.rec?.finished ?? null;
  }

  /** A finished run's length; a running message's time so far. */
  duration(): number | null {
    const started = this.started();
    if (started === null) return null;
    const end = this.state === 'run' ? Date.now() : this.finished();
    return end === null ? null : Math.max(0, end - started);
  }

  async row(): Promise<ListRow> {
    const params = [0, 1, 2, 3].map((i) => shown(this.param(i)));
    const finished = this.finished() ?? (this.state === 'done' || this.state === 'relayed' || this.state === 'err' ? ((await this.s.store.enteredAt(this.state, this.id)) ?? null) : null);
    return {
      msg_id: this.id,
      params,
      src: shown(this.src()),
      created: this.created(),
      started: this.started(),
      finished,
      duration_ms: this.duration(),
      count: this.count(),
      exit: this.rec?.exit ?? null,
      status: this.statusText(),
      ...(this.listed.entry ? { due: this.listed.entry.due } : {}),
      ...(this.state === 'que' || this.state === 'run' || this.state === 'relayed' ? { dest: this.dest() } : {}),
    };
  }
}

/** A value as the filter sees it: a string as it is, anything else as its JSON; null and absent as nothing. */
function textOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A value as a row shows it: its text, shortened to SHOWN_CHARS. */
function shown(value: unknown): string | null {
  const text = textOf(value);
  if (text === undefined) return null;
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS - 1)}…` : text;
}

const has = (value: unknown, text: string): boolean => textOf(value)?.includes(text) ?? false;

function matches(item: Item, f: RowFilter): boolean {
  if (f.from !== undefined || f.to !== undefined) {
    const created = item.created();
    if (f.from !== undefined && (created === null || created < f.from * 1000)) return false;
    if (f.to !== undefined && (created === null || created >= f.to * 1000)) return false;
  }
  for (const [i, key] of PARAM_KEYS.entries()) {
    const want = f[key];
    if (want !== undefined && !has(item.param(i), want)) return false;
  }
  if (f.src !== undefined && !has(item.src(), f.src)) return false;
  const { text } = f;
  if (text === undefined) return true;
  return item.id.includes(text) || [0, 1, 2, 3].some((i) => has(item.param(i), text)) || has(item.src(), text) || item.statusText().includes(text);
}

const isFiltered = (f: RowFilter): boolean => Object.values(f).some((x) => x !== undefined);

/** The sort key of an item, or null (listed last in either direction); created is the id, whose text sorts as its time. */
function sortKey(item: Item, sort: RowSort): number | string | null {
  switch (sort.replace(/^-/, '')) {
    case 'created':
      return item.id;
    case 'finished':
      return item.finished();
    default:
      return item.duration();
  }
}

/**
 * One page of a state's listing: `offset` matches skipped, at most `limit` rows. Without
 * a filter or a sort, the page is a slice of the listing and `matching` is the state's
 * count; else every message of the state is looked at (from memory, see the file comment).
 */
export async function listRows(s: QueueState, state: State, filter: RowFilter, sort: RowSort | undefined, offset: number, limit: number): Promise<RowsReply> {
  const total = numMessages(s)[state];
  if (!isFiltered(filter) && sort === undefined) {
    const items = Array.from(listing(s, state, offset, limit), (listed) => new Item(s, state, listed));
    return { total, matching: total, rows: await rowsOf(items) };
  }
  const found: { item: Item; key: number | string | null }[] = [];
  let reads = 0;
  for (const listed of everyListed(s, state)) {
    const item = new Item(s, state, listed);
    try {
      if (matches(item, filter)) found.push({ item, key: sort === undefined ? null : sortKey(item, sort) });
    } catch {
      // moved on since the listing was taken, or unreadable: not listed
    }
    reads += item.reads;
    if (reads >= READS_PER_TURN) {
      reads = 0;
      await new Promise((r) => setImmediate(r));
    }
  }
  if (sort !== undefined) {
    const sign = sort.startsWith('-') ? -1 : 1;
    // Stable: equal keys keep the listing's order; no key goes last.
    found.sort((a, b) => (a.key === null ? (b.key === null ? 0 : 1) : b.key === null ? -1 : a.key < b.key ? -sign : a.key > b.key ? sign : 0));
  }
  return { total, matching: found.length, rows: await rowsOf(found.slice(offset, offset + limit).map((f) => f.item)) };
}

async function rowsOf(items: Item[]): Promise<ListRow[]> {
  const rows: ListRow[] = [];
  for (const item of items) {
    try {
      rows.push(await item.row());
    } catch {
      // moved on or unreadable since it was listed: left out of the page
    }
  }
  return rows;
}
