/**
 * The in-memory `que` of a queue process: waiting messages ordered by due time, then id,
 * so the head is always the next to run. The common cases are O(1): a new message due
 * now appends at the end, and a start takes the head (a head offset; the array is
 * compacted once the dead prefix is large). Other inserts and removals are a binary
 * search plus a splice. Lookup by id is a Map.
 *
 * It also keeps an index by coalescing key (spec/rq.md §2.9) so that starting a
 * message finds its duplicates without scanning the whole list.
 */
import type { QueEntry } from '../store/que-index.js';
import { lowerBound } from './sorted-ids.js';

function before(a: QueEntry, b: QueEntry): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.id < b.id);
}

/** The tuple of the given params (1-based numbers) as a comparable key. */
export function paramKey(e: QueEntry, params: readonly number[]): string {
  return JSON.stringify(params.map((n) => e.params[n - 1] ?? null));
}

export class QueList {
  /** Entries from `first` on are live, in order; the prefix before it is dead. */
  private items: QueEntry[] = [];
  private first = 0;
  private readonly byId = new Map<string, QueEntry>();
  private coalesceParams: readonly number[] = [];
  private readonly byKey = new Map<string, Set<string>>();

  get size(): number {
    return this.items.length - this.first;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get(id: string): QueEntry | undefined {
    return this.byId.get(id);
  }

  /** Entries in order, from the head. */
  *[Symbol.iterator](): IterableIterator<QueEntry> {
    for (let i = this.first; i < this.items.length; i++) yield this.items[i]!;
  }

  head(): QueEntry | undefined {
    return this.items[this.first];
  }

  /** At most `limit` entries in order, skipping the first `offset`: O(limit). */
  slice(offset: number, limit: number): QueEntry[] {
    const from = this.first + offset;
    return this.items.slice(from, from + limit);
  }

  /** Replace the whole list (start-up recovery). */
  load(entries: QueEntry[]): void {
    this.byId.clear();
    for (const e of entries) this.byId.set(e.id, e);
    this.items = [...this.byId.values()].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    this.first = 0;
    this.reindex();
  }

  insert(e: QueEntry): void {
    if (this.byId.has(e.id)) this.remove(e.id);
    const end = this.items.length;
    if (end === this.first || !before(e, this.items[end - 1]!)) this.items.push(e);
    else if (this.first > 0 && before(e, this.items[this.first]!)) this.items[--this.first] = e;
    else this.items.splice(this.search(e), 0, e);
    this.byId.set(e.id, e);
    this.keySet(e)?.add(e.id);
  }

  remove(id: string): QueEntry | undefined {
    const e = this.byId.get(id);
    if (!e) return undefined;
    if (this.items[this.first] === e) {
      this.items[this.first++] = undefined as unknown as QueEntry;
      if (this.first > 1024 && this.first * 2 > this.items.length) {
        this.items = this.items.slice(this.first);
        this.first = 0;
      }
    } else {
      const at = this.search(e);
      if (this.items[at] !== e) throw new Error(`que list out of order at ${id}`);
      this.items.splice(at, 1);
    }
    this.byId.delete(id);
    this.keySet(e)?.delete(id);
    return e;
  }

  /** The index of the first live entry not before `e`. */
  private search(e: QueEntry): number {
    return lowerBound(this.items, this.first, (item) => before(item, e));
  }

  /** Set the coalescing params; rebuilds the key index. */
  setCoalesceParams(params: readonly number[]): void {
    this.coalesceParams = params;
    this.reindex();
  }

  /** Waiting messages that duplicate `e` by the coalescing params (none when off). */
  duplicatesOf(e: QueEntry): QueEntry[] {
    if (this.coalesceParams.length === 0) return [];
    const ids = this.byKey.get(paramKey(e, this.coalesceParams)) ?? new Set<string>();
    return [...ids].filter((id) => id !== e.id).map((id) => this.byId.get(id)!);
  }

  private keySet(e: QueEntry): Set<string> | undefined {
    if (this.coalesceParams.length === 0) return undefined;
    const key = paramKey(e, this.coalesceParams);
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    return set;
  }

  private reindex(): void {
    this.byKey.clear();
    for (const e of this) this.keySet(e)?.add(e.id);
  }
}
