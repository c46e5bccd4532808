/**
 * One lock per message, for the queue process. Every command that moves a message,
 * changes it, or answers by where it is runs under the message's lock (`exclusive`):
 * the engine's commit, finishing run, delete, destroy, run now, clone, attachments and
 * lookups, and every pull command (lease, ack, TTR end, set...). A move renames the
 * message's directory before its group commit's directory fsync ends, and memory follows
 * only then; under the lock no other command sees that half-moved message.
 *
 * The lock is a chain of promises per message. A call waits for the calls made before it
 * on any of its messages, and for nothing else, so waits cannot form a cycle. A call that
 * finds its messages free starts at once, in the caller's turn. `search` alone reads
 * without the lock: it lists, and must not wait for every message it passes.
 */
/** `fn()`, with a synchronous throw turned into a rejection. */
function start<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e as Error);
  }
}

export class MessageLocks {
  /** The end of the chain of calls on each message that has one. */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly onFree: () => void;

  /** `onFree` runs whenever a message's last call has ended (the pull desk wakes its waiters). */
  constructor(onFree: () => void) {
    this.onFree = onFree;
  }

  /** Run `fn` after every call made before on message(s) `ids`, and before the next. */
  exclusive<T>(ids: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    const list = typeof ids === 'string' ? [ids] : ids;
    const before: Array<Promise<void>> = [];
    for (const id of list) {
      const tail = this.tails.get(id);
      if (tail) before.push(tail);
    }
    // The chain is extended before `fn` starts, so its first steps already find the messages busy.
    let release = (): void => undefined;
    const tail = new Promise<void>((resolve) => (release = resolve));
    for (const id of list) this.tails.set(id, tail);
    void tail.then(() => {
      let freed = false;
      for (const id of list) {
        if (this.tails.get(id) !== tail) continue;
        this.tails.delete(id);
        freed = true;
      }
      if (freed) this.onFree();
    });
    const mine = before.length === 0 ? start(fn) : Promise.all(before).then(fn);
    // Later calls only learn that this one is over: its failure is its caller's to handle.
    void mine.then(release, release);
    return mine;
  }

  /** Is a call on message `id` under way or waiting? */
  isBusy(id: string): boolean {
    return this.tails.has(id);
  }

  /** Settles once the calls on message `id` made so far are over; undefined when there are none. */
  whenFree(id: string): Promise<void> | undefined {
    return this.tails.get(id);
  }
}
