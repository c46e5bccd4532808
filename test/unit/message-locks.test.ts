// The per-message lock (message-locks.ts): calls in order, several messages at once,
// a failure handing the lock on, and the freeing that wakes the pull desk.
import { describe, expect, it } from 'vitest';
import { MessageLocks } from '../../src/queue/message-locks.js';

/** A call that runs until `finish` is called, logging when it starts and ends. */
function gate(log: string[], name: string): { fn: () => Promise<string>; finish: () => void; fail: (e: Error) => void } {
  let finish = (): void => undefined;
  let fail = (_e: Error): void => undefined;
  const fn = (): Promise<string> => {
    log.push(`${name} start`);
    return new Promise<string>((resolve, reject) => {
      finish = () => {
        log.push(`${name} end`);
        resolve(name);
      };
      fail = reject;
    });
  };
  return { fn, finish: () => finish(), fail: (e) => fail(e) };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('MessageLocks', () => {
  it('runs calls on one message one after another, in the order they were made', async () => {
    const locks = new MessageLocks(() => undefined);
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const pa = locks.exclusive('m1', a.fn);
    const pb = locks.exclusive('m1', b.fn);
    await turn();
    expect(log).toEqual(['a start']);
    a.finish();
    expect(await pa).toBe('a');
    await turn();
    expect(log).toEqual(['a start', 'a end', 'b start']);
    b.finish();
    expect(await pb).toBe('b');
  });

  it('starts a call on a free message at once, already holding the lock, and other messages do not wait', async () => {
    const locks = new MessageLocks(() => undefined);
    const seen: boolean[] = [];
    const log: string[] = [];
    const a = gate(log, 'a');
    void locks.exclusive('m1', a.fn);
    void locks.exclusive('m2', async () => {
      seen.push(locks.isBusy('m2'));
      log.push('m2');
    });
    // Both started in this turn: no microtask has run yet.
    expect(log).toEqual(['a start', 'm2']);
    expect(seen).toEqual([true]);
    a.finish();
  });

  it('a call on several messages waits for each of them, and holds them all', async () => {
    const locks = new MessageLocks(() => undefined);
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const both = gate(log, 'both');
    void locks.exclusive('m1', a.fn);
    void locks.exclusive('m2', b.fn);
    const pBoth = locks.exclusive(['m1', 'm2'], both.fn);
    const after = locks.exclusive('m2', async () => void log.push('after'));
    a.finish();
    await turn();
    expect(log).toEqual(['a start', 'b start', 'a end']);
    b.finish();
    await turn();
    expect(log).toEqual(['a start', 'b start', 'a end', 'b end', 'both start']);
    both.finish();
    await pBoth;
    await after;
    expect(log.at(-1)).toBe('after');
  });

  it('a failed call hands the lock on, and its caller sees the failure', async () => {
    const locks = new MessageLocks(() => undefined);
    const log: string[] = [];
    const a = gate(log, 'a');
    const pa = locks.exclusive('m1', a.fn);
    const pb = locks.exclusive('m1', async () => 'b ran');
    a.fail(new Error('boom'));
    await expect(pa).rejects.toThrow('boom');
    expect(await pb).toBe('b ran');
    const thrown = locks.exclusive('m1', () => {
      throw new Error('at once');
    });
    await expect(thrown).rejects.toThrow('at once');
    await turn();
    expect(locks.isBusy('m1')).toBe(false);
  });

  it('frees a message when its last call ends, says so once per freeing, and `settled` waits for every call made so far', async () => {
    let freed = 0;
    const locks = new MessageLocks(() => freed++);
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    void locks.exclusive('m1', a.fn);
    void locks.exclusive('m1', b.fn);
    let settled = false;
    void locks.settled('m1').then(() => (settled = true));
    let otherSettled = false;
    void locks.settled('m2').then(() => (otherSettled = true));
    expect(locks.isBusy('m1')).toBe(true);
    a.finish();
    await turn();
    expect(otherSettled).toBe(true);
    expect(settled).toBe(false);
    expect(freed).toBe(0);
    b.finish();
    await turn();
    expect(settled).toBe(true);
    expect(locks.isBusy('m1')).toBe(false);
    expect(freed).toBe(1);
  });
});
