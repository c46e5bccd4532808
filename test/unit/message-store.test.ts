// The hashed listings of the message store (spec/rq.md §1.8): ids newest first, read
// lazily directory by directory, skipped minute directories only counted; the count
// walks the same tree. And the start-up sweep of prep/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGroupCommitter } from '../../src/store/group-commit.js';
import { ensureQueueDirs, queueLayout, rootLayout, type QueueLayout } from '../../src/store/layout.js';
import { createMessageStore, type MessageStore } from '../../src/store/message-store.js';

let root: string;
let q: QueueLayout;
let store: MessageStore;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-store-'));
  q = queueLayout(rootLayout(root), 'q');
  ensureQueueDirs(q);
  store = createMessageStore(q, createGroupCommitter());
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** `count` done ids in each of these minutes of 2025-01-02 03:mm. */
function seedDone(minutes: number[], count: number): string[] {
  const ids: string[] = [];
  for (const m of minutes) {
    for (let i = 0; i < count; i++) {
      const id = `20250102.03${String(m).padStart(2, '0')}.${String(i).padStart(2, '0')}.000.${100 + i}`;
      fs.mkdirSync(q.msgDir('done', id), { recursive: true });
      ids.push(id);
    }
  }
  return ids.sort().reverse();
}

describe('hashed listings', () => {
  it('lists newest first from an offset, and counts the same tree', () => {
    const ids = seedDone([5, 7, 6], 4);
    fs.mkdirSync(path.join(q.stateDir('done'), 'not-a-day'));
    expect([...store.hashedIds('done')]).toEqual(ids);
    expect([...store.hashedIds('done', 5)]).toEqual(ids.slice(5));
    expect([...store.hashedIds('done', 8)]).toEqual(ids.slice(8));
    expect([...store.hashedIds('done', 12)]).toEqual([]);
    expect(store.countHashed('done')).toBe(12);
    expect([...store.hashedIds('relayed')]).toEqual([]);
    expect(store.countHashed('relayed')).toBe(0);
  });

  it('reads a minute directory only when the walk reaches it', () => {
    const ids = seedDone([8, 9], 3);
    // An older "minute directory" that cannot be listed: the walk fails only if it gets there.
    fs.writeFileSync(path.join(q.stateDir('done'), '20250102', '03', '07'), '');
    const walk = store.hashedIds('done')[Symbol.iterator]();
    expect([1, 2, 3, 4, 5, 6].map(() => walk.next().value)).toEqual(ids);
    expect(() => walk.next()).toThrow(/ENOTDIR/);
  });
});

describe('sweepPrep', () => {
  it('removes half-made allocations and lists the rest', () => {
    for (const name of ['_20250102.0300.00.000.1.0', '20250102.0300.00.000.2', '.hidden']) fs.mkdirSync(path.join(q.stateDir('prep'), name));
    expect(store.sweepPrep()).toEqual(['20250102.0300.00.000.2']);
    expect(fs.readdirSync(q.stateDir('prep')).sort()).toEqual(['.hidden', '20250102.0300.00.000.2']);
  });
});
