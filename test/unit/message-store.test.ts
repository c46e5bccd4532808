// The hashed listings of the message store (docs/layout.md): ids newest first, read
// lazily directory by directory, skipped minute directories only counted; the count
// walks the same tree. The start-up sweep of prep/. And a full disk, for real (a small
// tmpfs): RQ_NO_SPACE naming the queue, no temp file left, and the one move that needs no
// room (unclaim, run → que) still made.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { buildMessage } from '../../src/domain/message.js';
import { createGroupCommitter } from '../../src/store/group-commit.js';
import { ensureQueueDirs, queueLayout, rootLayout, type QueueLayout } from '../../src/store/layout.js';
import { createMessageStore, type MessageStore } from '../../src/store/message-store.js';
import { smallDisk, spareContent, type SmallDisk } from '../helpers/full-disk.js';

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

describe('creates', () => {
  it('give messages made one after the other ids in that order, within a millisecond too', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      ids.push((await store.create((id) => buildMessage({ dest: 'q' }, id, id, 0), 'que')).msg.msg_id);
      // Now and then the directories made ahead are ready, as between requests.
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    const key = (id: string): [string, number] => [id.slice(0, id.lastIndexOf('.')), Number(id.slice(id.lastIndexOf('.') + 1))];
    const inverted = ids.filter((id, i) => {
      if (i === 0) return false;
      const [stamp, ino] = key(id);
      const [prevStamp, prevIno] = key(ids[i - 1]!);
      return stamp === prevStamp && ino < prevIno;
    });
    expect(inverted).toEqual([]);
    store.close();
  });
});

describe('sweepPrep', () => {
  it('removes half-made allocations and lists the rest', () => {
    for (const name of ['_20250102.0300.00.000.1.0', '20250102.0300.00.000.2', '.hidden']) fs.mkdirSync(path.join(q.stateDir('prep'), name));
    expect(store.sweepPrep()).toEqual(['20250102.0300.00.000.2']);
    expect(fs.readdirSync(q.stateDir('prep')).sort()).toEqual(['.hidden', '20250102.0300.00.000.2']);
  });
});

describe('a full disk', () => {
  const NO_SPACE = { code: 'RQ_NO_SPACE', message: 'no space left on device: queues/q' };

  /** A store of queue `q` whose queues/ is a small tmpfs, and that disk. */
  function storeOnSmallDisk(): { store: MessageStore; q: QueueLayout; disk: SmallDisk } {
    const r = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-store-disk-'));
    // Runs after the disk's own hook, which unmounts it (hooks run in reverse order).
    onTestFinished(() => fs.rmSync(r, { recursive: true, force: true }));
    const disk = smallDisk(path.join(r, 'queues'), 256 * 1024);
    const layout = queueLayout(rootLayout(r), 'q');
    ensureQueueDirs(layout);
    return { store: createMessageStore(layout, createGroupCommitter()), q: layout, disk };
  }

  const create = (s: MessageStore): Promise<string> => s.create((id) => buildMessage({ dest: 'q' }, id, id, 0), 'que').then((c) => c.msg.msg_id);

  it('refuses a create with RQ_NO_SPACE naming the queue, and leaves nothing half-made', async () => {
    const { store: s, q: layout, disk } = storeOnSmallDisk();
    disk.fill();
    await expect(create(s)).rejects.toMatchObject(NO_SPACE);
    // Only directories made ahead for new messages (spare-dirs.ts), if any: empty, or an empty msg.
    for (const name of fs.readdirSync(layout.stateDir('prep'))) expect([name, spareContent(path.join(layout.stateDir('prep'), name))]).toEqual([name, 'spare']);
    expect(fs.readdirSync(layout.stateDir('que'))).toEqual([]);
  });

  it('refuses a move or a status whose file does not fit with RQ_NO_SPACE, not as a missing message, and leaves no temp file', async () => {
    const { store: s, q: layout, disk } = storeOnSmallDisk();
    const id = await create(s);
    s.claim(id);
    const dir = layout.msgDir('run', id);
    disk.fill();
    const status = 'x'.repeat(16384);
    await expect(s.move(id, 'run', 'done', { status })).rejects.toMatchObject(NO_SPACE);
    expect(() => s.writeStatus('run', id, status)).toThrow(expect.objectContaining(NO_SPACE));
    expect(() => s.writeMsg('run', id, { ...s.readMsg('run', id), param1: status })).toThrow(expect.objectContaining(NO_SPACE));
    expect(fs.readdirSync(dir).sort()).toEqual(['msg']);
    disk.free();
    await s.move(id, 'run', 'done', { status });
    expect(s.readStatus('done', id)).toEqual({ job_status: status });
  });

  it('moves a run that never started back to que without room, its pid and temp files gone', async () => {
    const { store: s, q: layout, disk } = storeOnSmallDisk();
    const id = await create(s);
    s.claim(id);
    const dir = layout.msgDir('run', id);
    fs.mkdirSync(path.join(dir, 'job'));
    for (const name of ['pid.tmp', 'status.tmp']) fs.writeFileSync(path.join(dir, name), '');
    disk.fill();
    s.unclaim(id);
    expect(fs.existsSync(dir)).toBe(false);
    expect(fs.readdirSync(layout.msgDir('que', id)).sort()).toEqual(['job', 'msg']);
    expect(s.readMsg('que', id)).toMatchObject({ msg_id: id, count: 0 });
  });
});
