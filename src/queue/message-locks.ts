/**
 * One lock per message, for the queue process. A command that moves or changes one
 * message runs under its lock (`exclusive`): commit, a finishing run, delete, destroy,
 * run now, clone and attachments, and the pull commands that change a message (lease,
 * ack, nack, touch, set, TTR and TTL ends...). A lookup of one message (get_message and
 * its state and status, peek of a ref) waits until it is free
 * (`settled`) and reads in that same turn, without taking the lock, so
 * reading a message never holds back a lease of it. A move renames the message's
 * directory before its group commit's directory fsync ends, and memory follows only then;
 * so no command sees a message half-moved.
 *
 * The lock is a chain of promises per message. A call waits for the calls made before it
 * on any of its messages. The one rule: a call must never wait for another call on a
 * message it holds (it would wait for itself); then waits cannot form a cycle. A call
 * that finds its messages free starts at once, in the caller's turn.
 *
 * Not under the lock: the scheduler's claim (que → run, one synchronous rename), a clean's
 * removal of finished messages, and the listings (`messages`, `search`, pull's `list` and
 * `peek` of the next message), which may show a message where it was, or where it went.
 */
import { coerceError } from '../domain/errors.js';
/** `fn()`, with a synchronous throw turned into a rejection. */
function start<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(coerceError(e));
  }
}

export class MessageLocks {
  /** The end of the chain of calls on each message that has one. */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly onFree: () => void;

  /** `onFree` runs whenever a message's last call has ended (the queue wakes its waiting leases). */
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
    const mine = before.length === 0 ? start(fn) : Promise.all(before).then(() => fn());
    // Later calls only learn that this one is over: its failure is its caller's to handle.
    void mine.then(release, release);
    return mine;
  }

  /** No call on any message is under way or waiting. */
  idle(): boolean {
    return this.tails.size === 0;
  }

  /** Is a call on message `id` under way or waiting? */
  isBusy(id: string): boolean {
    return this.tails.has(id);
  }

  /** Once no call on message `id` is under way or waiting; code that follows in the same turn sees it settled. */
  async settled(id: string): Promise<void> {
    for (let tail = this.tails.get(id); tail; tail = this.tails.get(id)) await tail;
  }
}
