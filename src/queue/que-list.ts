/**
 * The in-memory `que` of a queue process, in two ordered parts:
 * - **ready** (due now): ordered by priority (higher first), then rank (a pull message's
 *   `rank`, else its due time), then sort key (a pull message's `sort_key`, else its id).
 *   The head is the next message to run or lease. For RQ's messages, which have none of
 *   the pull fields, this is RQ's order: due time, then id.
 * - **delayed** (due later): ordered by due time, then id. `promote` moves the entries
 *   that have come due into ready; every read of the head promotes first, so a message
 *   is never passed over because its timer has not fired yet.
 *
 * The common cases are O(1): a new message due now with no pull order appends at the
 * end, and a start takes the head (a head offset; the array is compacted once the dead
 * prefix is large). Other inserts and removals are a binary search plus a splice.
 * Lookup by id is a Map. Listing order (`messages`, paging) is ready, then delayed.
 *
 * It also keeps an index by coalescing key (`coalesce_params`) so that starting a
 * message finds its duplicates without scanning the whole list. A big param is keyed by
 * its digest (que-index.ts BigParam), so the keys stay small too.
 */
import { BigParam, type QueEntry } from '../store/que-index.js';
import { lowerBound } from './sorted-ids.js';

const rankOf = (e: QueEntry): number => e.pull?.r ?? e.dueMs;
const keyOf = (e: QueEntry): string => e.pull?.k ?? e.id;

/** The ready order (see above). */
function readyBefore(a: QueEntry, b: QueEntry): boolean {
  const pa = a.pull?.p ?? 0;
  const pb = b.pull?.p ?? 0;
  if (pa !== pb) return pa > pb;
  const ra = rankOf(a);
  const rb = rankOf(b);
  if (ra !== rb) return ra < rb;
  const ka = keyOf(a);
  const kb = keyOf(b);
  if (ka !== kb) return ka < kb;
  return a.id < b.id;
}

/** The delayed order: due time, then id. */
function dueBefore(a: QueEntry, b: QueEntry): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.id < b.id);
}

/**
 * The tuple of the given params (1-based numbers) of `values` (an entry's params) as a
 * comparable key: each param's JSON text, or `#` and the digest of a BigParam (whose JSON
 * text is too long to keep, and never starts with `#`).
 */
export function paramKey(values: readonly unknown[], params: readonly number[]): string {
  const parts = params.map((n) => {
    const v = values[n - 1] ?? null;
    return v instanceof BigParam ? `#${v.digest}` : JSON.stringify(v);
  });
  return `[${parts.join(',')}]`;
}

/** One ordered part: entries from `first` on are live; the prefix before it is dead. */
class Ordered {
  items: QueEntry[] = [];
  first = 0;
  private readonly before: (a: QueEntry, b: QueEntry) => boolean;

  constructor(before: (a: QueEntry, b: QueEntry) => boolean) {
    this.before = before;
  }

  get size(): number {
    return this.items.length - this.first;
  }

  head(): QueEntry | undefined {
    return this.items[this.first];
  }

  load(entries: QueEntry[]): void {
    this.items = entries.sort((a, b) => (this.before(a, b) ? -1 : this.before(b, a) ? 1 : 0));
    this.first = 0;
  }

  insert(e: QueEntry): void {
    const end = this.items.length;
    if (end === this.first || !this.before(e, this.items[end - 1]!)) this.items.push(e);
    else if (this.first > 0 && this.before(e, this.items[this.first]!)) this.items[--this.first] = e;
    else this.items.splice(this.search(e), 0, e);
  }

  remove(e: QueEntry): void {
    if (this.items[this.first] === e) {
      this.items[this.first++] = undefined as unknown as QueEntry;
      if (this.first > 1024 && this.first * 2 > this.items.length) {
        this.items = this.items.slice(this.first);
        this.first = 0;
      }
      return;
    }
    const at = this.search(e);
    if (this.items[at] !== e) throw new Error(`que list out of order at ${e.id}`);
    this.items.splice(at, 1);
  }

  /** The index of the first live entry not before `e`. */
  private search(e: QueEntry): number {
    return lowerBound(this.items, this.first, (item) => this.before(item, e));
  }
}

export class QueList {
  private readonly ready = new Ordered(readyBefore);
  private readonly delayed = new Ordered(dueBefore);
  private readonly byId = new Map<string, QueEntry>();
  /** Ids of the entries in `delayed`. */
  private readonly delayedIds = new Set<string>();
  private coalesceParams: readonly number[] = [];
  private readonly byKey = new Map<string, Set<string>>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  get size(): number {
    return this.byId.size;
  }

  /** Messages due now (after promoting). */
  get readySize(): number {
    this.promote();
    return this.ready.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get(id: string): QueEntry | undefined {
    return this.byId.get(id);
  }

  /** Entries in listing order: ready from the head, then delayed. */
  *[Symbol.iterator](): IterableIterator<QueEntry> {
    this.promote();
    for (const part of [this.ready, this.delayed]) {
      for (let i = part.first; i < part.items.length; i++) yield part.items[i]!;
    }
  }

  /** Ready entries from the head (after promoting). */
  *readyEntries(): IterableIterator<QueEntry> {
    this.promote();
    for (let i = this.ready.first; i < this.ready.items.length; i++) yield this.ready.items[i]!;
  }

  /** Delayed entries in the ready order (priority, rank, sort key), as Workq lists scheduled jobs: O(n log n). */
  delayedInReadyOrder(): QueEntry[] {
    this.promote();
    return this.delayed.items.slice(this.delayed.first).sort((a, b) => (readyBefore(a, b) ? -1 : readyBefore(b, a) ? 1 : 0));
  }

  /** The next message to run or lease, if any is due. */
  head(): QueEntry | undefined {
    this.promote();
    return this.ready.head();
  }

  /** When the next delayed message comes due (epoch ms), if any is delayed. */
  nextDueMs(): number | undefined {
    this.promote();
    return this.delayed.head()?.dueMs;
  }

  /** At most `limit` entries in listing order, skipping the first `offset`: O(limit). */
  slice(offset: number, limit: number): QueEntry[] {
    this.promote();
    const fromReady = this.ready.items.slice(this.ready.first + offset, this.ready.first + offset + limit);
    if (fromReady.length >= limit) return fromReady;
    const skip = Math.max(0, offset - this.ready.size);
    const start = this.delayed.first + skip;
    return fromReady.concat(this.delayed.items.slice(start, start + limit - fromReady.length));
  }

  /** Replace the whole list (start-up recovery). */
  load(entries: QueEntry[]): void {
    this.byId.clear();
    this.delayedIds.clear();
    for (const e of entries) this.byId.set(e.id, e);
    const now = this.now();
    const ready: QueEntry[] = [];
    const delayed: QueEntry[] = [];
    for (const e of this.byId.values()) {
      if (e.dueMs <= now) ready.push(e);
      else {
        delayed.push(e);
        this.delayedIds.add(e.id);
      }
    }
    this.ready.load(ready);
    this.delayed.load(delayed);
    this.reindex();
  }

  insert(e: QueEntry): void {
    if (this.byId.has(e.id)) this.remove(e.id);
    this.promote();
    if (e.dueMs <= this.now()) this.ready.insert(e);
    else {
      this.delayed.insert(e);
      this.delayedIds.add(e.id);
    }
    this.byId.set(e.id, e);
    this.keySet(e)?.add(e.id);
  }

  remove(id: string): QueEntry | undefined {
    const e = this.byId.get(id);
    if (!e) return undefined;
    if (this.delayedIds.delete(id)) this.delayed.remove(e);
    else this.ready.remove(e);
    this.byId.delete(id);
    this.keySet(e)?.delete(id);
    return e;
  }

  /** Move the delayed entries that have come due into ready; returns how many moved. */
  promote(): number {
    const now = this.now();
    let moved = 0;
    for (let e = this.delayed.head(); e !== undefined && e.dueMs <= now; e = this.delayed.head()) {
      this.delayed.remove(e);
      this.delayedIds.delete(e.id);
      this.ready.insert(e);
      moved++;
    }
    return moved;
  }

  /** Set the coalescing params; rebuilds the key index. */
  setCoalesceParams(params: readonly number[]): void {
    this.coalesceParams = params;
    this.reindex();
  }

  /** Waiting messages that duplicate `e` by the coalescing params (none when off). */
  duplicatesOf(e: QueEntry): QueEntry[] {
    if (this.coalesceParams.length === 0) return [];
    const ids = this.byKey.get(paramKey(e.params, this.coalesceParams)) ?? new Set<string>();
    return [...ids].filter((id) => id !== e.id).map((id) => this.byId.get(id)!);
  }

  private keySet(e: QueEntry): Set<string> | undefined {
    if (this.coalesceParams.length === 0) return undefined;
    const key = paramKey(e.params, this.coalesceParams);
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    return set;
  }

  private reindex(): void {
    this.byKey.clear();
    for (const e of this.byId.values()) this.keySet(e)?.add(e.id);
  }
}
