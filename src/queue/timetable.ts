/**
 * A timetable of instants, one per message, on one Node timer: the pull model's lease
 * ends (TTR) and expiries (TTL) (timers.ts). Setting a message's instant replaces the old
 * one; when instants come, `onDue(id, at)` is called for each, in time order.
 *
 * Inside is a min-heap of (instant, id) and a map of each message's current instant.
 * A replaced or deleted instant stays in the heap until it surfaces and is skipped there;
 * the heap is rebuilt from the map when such stale entries are most of it, so memory
 * follows the messages, not the traffic. The one timer is armed for the earliest
 * instant (at most Node's 2^31−1 ms ahead; a later one is armed again when it fires,
 * as is a timer that fires a millisecond early).
 */

/** Node's longest timer. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

interface Entry {
  at: number;
  id: string;
}

export class Timetable {
  private readonly heap: Entry[] = [];
  private readonly instants = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private readonly onDue: (id: string, at: number) => void;

  constructor(onDue: (id: string, at: number) => void) {
    this.onDue = onDue;
  }

  /** The message's instant (epoch ms), replacing any earlier one. */
  set(id: string, at: number): void {
    if (this.instants.get(id) === at) return;
    this.instants.set(id, at);
    if (this.heap.length > 2 * this.instants.size + 1024) this.rebuild();
    this.push({ at, id });
    if (at < this.timerAt) this.arm(at);
  }

  delete(id: string): void {
    this.instants.delete(id);
  }

  /** Forget every instant and stop the timer. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.heap.length = 0;
    this.instants.clear();
  }

  /** Take out every instant that has come by `now`, in time order, without calling `onDue`. */
  takeDue(now: number): Entry[] {
    const due: Entry[] = [];
    for (let top = this.heap[0]; top !== undefined && top.at <= now; top = this.heap[0]) {
      this.pop();
      if (this.instants.get(top.id) !== top.at) continue;
      this.instants.delete(top.id);
      due.push(top);
    }
    return due;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.min(at - Date.now(), MAX_TIMER_MS)));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    for (const { id, at } of this.takeDue(Date.now())) this.onDue(id, at);
    const next = this.heap[0];
    if (next) this.arm(next.at);
  }

  private rebuild(): void {
    this.heap.length = 0;
    for (const [id, at] of this.instants) this.push({ at, id });
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= h[i]!.at) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop();
    if (h.length === 0 || !last) return;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }
}
