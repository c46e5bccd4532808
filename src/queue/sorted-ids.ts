/**
 * A set of message ids kept sorted (string order, as RQ sorted names), for the `err`
 * state of a queue process: the `messages` listing is newest first, so
 * a page at offset 50,000 of 100,000 ids is a slice, never a sort per request. Adding or
 * removing one id is a binary search plus a splice (a memmove: 100,000 ids move in well
 * under a millisecond); a bulk load sorts once. Also the one binary search of the sorted
 * arrays of a queue process (this set and the que list).
 */

/** The index of the first item in `items[from..]` that is not before the sought one. */
export function lowerBound<T>(items: readonly T[], from: number, isBefore: (item: T) => boolean): number {
  let lo = from;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (isBefore(items[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedIds {
  /** Ascending, no duplicates. */
  private ids: string[] = [];

  get size(): number {
    return this.ids.length;
  }

  has(id: string): boolean {
    return this.ids[this.search(id)] === id;
  }

  add(id: string): void {
    const at = this.search(id);
    if (this.ids[at] !== id) this.ids.splice(at, 0, id);
  }

  delete(id: string): boolean {
    const at = this.search(id);
    if (this.ids[at] !== id) return false;
    this.ids.splice(at, 1);
    return true;
  }

  /** Add many ids at once (start-up listing): one sort instead of a splice per id. */
  addAll(ids: Iterable<string>): void {
    const merged = [...this.ids, ...ids].sort();
    this.ids = merged.filter((id, i) => i === 0 || id !== merged[i - 1]);
  }

  /** Ids in descending order, skipping `offset`, at most `limit`. */
  descending(offset: number, limit: number): string[] {
    const out: string[] = [];
    for (let i = this.ids.length - 1 - offset; i >= 0 && out.length < limit; i--) out.push(this.ids[i]!);
    return out;
  }

  private search(id: string): number {
    return lowerBound(this.ids, 0, (other) => other < id);
  }
}
