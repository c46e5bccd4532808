/**
 * The `clean` command and the disk usage of `stats` (queue/housekeeping.ts) on a real
 * queue process: messages that really ran and finished, limits from config.json (a
 * reload) or the command's age override, and afterwards the counts, the listings and the
 * directories as they are on disk, checked against an independent walk of the tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { normaliseCleaner } from '../../src/domain/retention.js';
import { TestRoot, waitFor, useTestRoot, type QueueSpec } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

interface Removed {
  messages: number;
  bytes: number;
}
interface CleanReply {
  finished: boolean;
  started_at: number;
  limits: Record<'done' | 'relayed' | 'err', { max_age_days: number | null; max_count: number | null; max_bytes: number | null }>;
  removed: Record<'done' | 'relayed' | 'err', Removed>;
  error?: string;
}
interface Usage {
  measured_at: number;
  took_ms: number;
  bytes: number;
  states: Record<string, { messages: number; bytes: number }>;
}
interface Stats {
  counts: Record<string, number>;
  cleaner: Record<string, unknown>;
  disk: Usage | null;
}

async function clean(queue: string, arg: Record<string, unknown> = {}): Promise<CleanReply> {
  const reply = (await t.rpc(queue, 'clean', arg)) as [string, CleanReply];
  expect(reply[0], JSON.stringify(reply)).toBe('ok');
  expect(reply[1].finished).toBe(true);
  return reply[1];
}

const stats = async (queue: string): Promise<Stats> => (await t.rpc(queue, 'stats', '')) as Stats;

/** Send messages one after the other (so their ids ascend) and wait until each has finished in `state`; oldest first. */
async function finish(queue: string, msgs: Array<Record<string, unknown>>, state = 'done'): Promise<string[]> {
  const ids: string[] = [];
  for (const msg of msgs) {
    const id = await t.send(queue, msg);
    await t.waitState(queue, id, state);
    ids.push(id);
  }
  return ids;
}

/** Rewrite the queue's config.json, SIGHUP it, and wait until its stats show the new cleaner limits. */
async function reconfigure(spec: QueueSpec & { cleaner: Record<string, unknown> }): Promise<void> {
  t.reconfigure(spec);
  const wanted = JSON.stringify(normaliseCleaner(spec.cleaner));
  await waitFor(async () => JSON.stringify((await stats(spec.name)).cleaner) === wanted, 5_000, 'the new cleaner limits');
}

/** `du`: blocks × 512 of a tree, every entry counted (no hard links in these tests). */
function du(p: string): number {
  const st = fs.lstatSync(p);
  let bytes = st.blocks * 512;
  if (st.isDirectory()) for (const n of fs.readdirSync(p)) bytes += du(path.join(p, n));
  return bytes;
}

/** The minute directories of a hashed state, and the ids in them, as on disk. */
function hashedTree(queue: string, state: string): { minuteDirs: string[]; ids: string[] } {
  const base = path.join(t.queueDir(queue), state);
  const minuteDirs: string[] = [];
  const ids: string[] = [];
  for (const d of fs.readdirSync(base)) {
    for (const h of fs.readdirSync(path.join(base, d))) {
      for (const m of fs.readdirSync(path.join(base, d, h))) {
        minuteDirs.push(path.join(base, d, h, m));
        ids.push(...fs.readdirSync(path.join(base, d, h, m)));
      }
    }
  }
  return { minuteDirs, ids: ids.sort() };
}

/** A message directory of a hashed state. */
function hashedDir(queue: string, state: string, id: string): string {
  const m = /^(\d{8})\.(\d\d)(\d\d)/.exec(id)!;
  return path.join(t.queueDir(queue), state, m[1]!, m[2]!, m[3]!, id);
}

const trash = (queue: string): string[] => {
  try {
    return fs.readdirSync(path.join(t.queueDir(queue), '.trash'));
  } catch {
    return [];
  }
};

/** A script that errs when param1 is `e`, else is done. */
function mixedScript(): string {
  fs.writeFileSync(path.join(t.root, 'mixed.sh'), '#!/bin/sh\nif [ "$RQ_PARAM1" = e ]; then echo "err on purpose" >&3; else echo "done ok" >&3; fi\n', { mode: 0o755 });
  return './mixed.sh';
}

describe('clean', () => {
  it('removes the oldest done messages beyond max_count; counts, listing and disk agree', async () => {
    const spec = { name: 'w', script: 'done.sh' };
    t.addQueue(spec);
    await t.start('w');
    const ids = await finish('w', Array.from({ length: 6 }, (_, i) => ({ param1: `m${i}` })));
    await reconfigure({ ...spec, cleaner: { max_count: 2 } });
    const sizes = ids.map((id) => du(hashedDir('w', 'done', id)));
    const r = await clean('w');
    expect(r.limits.done).toEqual({ max_age_days: 2, max_count: 2, max_bytes: null });
    expect(r.limits.err).toEqual({ max_age_days: 30, max_count: null, max_bytes: null });
    expect(r.removed).toEqual({ done: { messages: 4, bytes: sizes.slice(0, 4).reduce((a, b) => a + b, 0) }, relayed: { messages: 0, bytes: 0 }, err: { messages: 0, bytes: 0 } });
    expect(r.error).toBeUndefined();
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 2 });
    expect((await stats('w')).counts['done']).toBe(2);
    expect(await t.rpc('w', 'messages', { state: 'done' })).toEqual([{ msg_id: ids[5] }, { msg_id: ids[4] }]);
    expect(hashedTree('w', 'done').ids).toEqual(ids.slice(4));
    for (const id of ids.slice(0, 4)) expect(await t.rpc('w', 'get_message_state', { msg_id: id })).toEqual(['fail', 'msg not found']);
    expect(trash('w')).toEqual([]);
    // Nothing more is over the limit.
    expect((await clean('w')).removed.done.messages).toBe(0);
  });

  it('with max_age_days 0 (RQ’s override) empties done and its directories; err keeps its own 30 days, then its own count', async () => {
    const spec = { name: 'w', script: mixedScript() };
    t.addQueue(spec);
    await t.start('w');
    const done = await finish('w', [{}, {}, {}]);
    const errs = await finish('w', [{ param1: 'e' }, { param1: 'e' }], 'err');
    const r = await clean('w', { max_age_days: 0 });
    expect(r.limits.done.max_age_days).toBe(0);
    expect(r.removed.done.messages).toBe(3);
    expect(r.removed.err.messages).toBe(0);
    // Every emptied minute, hour and day directory went with the messages.
    expect(fs.readdirSync(path.join(t.queueDir('w'), 'done'))).toEqual([]);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 0, err: 2 });
    for (const id of done) expect(await t.state('w', id)).toBeUndefined();

    await reconfigure({ ...spec, cleaner: { err: { max_count: 1 } } });
    const again = await clean('w');
    expect(again.removed.err.messages).toBe(1);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 0, err: 1 });
    expect(await t.rpc('w', 'messages', { state: 'err' })).toEqual([{ msg_id: errs[1] }]);
    expect(fs.readdirSync(path.join(t.queueDir('w'), 'err'))).toEqual([errs[1]]);
    // A new message still finishes into done after its directories were removed.
    const [later] = await finish('w', [{}]);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 1 });
    expect(hashedTree('w', 'done').ids).toEqual([later]);
  });

  it('removes the oldest until what stays is within max_bytes, and reports the bytes freed', async () => {
    const spec = { name: 'w', script: 'big.sh' };
    t.addQueue(spec);
    await t.start('w');
    const ids = await finish('w', [40_000, 80_000, 120_000, 160_000].map((n) => ({ param1: String(n) })));
    const sizes = ids.map((id) => du(hashedDir('w', 'done', id)));
    // The two newest and their minute directories fit; the second oldest does not.
    const maxBytes = sizes[2]! + sizes[3]! + 16_384;
    expect(sizes[1]!).toBeGreaterThan(16_384);
    await reconfigure({ ...spec, cleaner: { max_bytes: maxBytes } });
    const r = await clean('w');
    expect(r.removed.done).toEqual({ messages: 2, bytes: sizes[0]! + sizes[1]! });
    expect(hashedTree('w', 'done').ids).toEqual(ids.slice(2));
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 2 });
  });

  it('deletes in batches and keeps the counts exact while messages keep finishing', async () => {
    const spec = { name: 'w', script: 'done.sh', num_workers: 4 };
    t.addQueue(spec);
    await t.start('w');
    const send = async (n: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < n; i += 50) ids.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => t.send('w', {})))));
      return ids;
    };
    await send(1_050);
    await waitFor(async () => ((await t.rpc('w', 'num_messages', {})) as { done: number }).done === 1_050, 20_000, '1,050 messages done');
    await reconfigure({ ...spec, cleaner: { max_count: 20 } });
    const [r, more] = await Promise.all([clean('w'), send(50)]);
    expect(r.removed.done.messages).toBeGreaterThanOrEqual(1_030);
    const counts = async (): Promise<Record<string, number>> => (await t.rpc('w', 'num_messages', {})) as Record<string, number>;
    await waitFor(async () => {
      const c = await counts();
      return c['que'] === 0 && c['run'] === 0;
    }, 10_000, 'the last messages to finish');
    const counted = (await counts())['done'];
    const onDisk = hashedTree('w', 'done').ids;
    expect(counted).toBe(onDisk.length);
    expect(counted).toBe(1_050 + 50 - r.removed.done.messages);
    // The messages sent during the clean are newer than every original: none was taken.
    for (const id of more) expect(onDisk).toContain(id);
    expect(trash('w')).toEqual([]);
  });

  it('deletes the trash an interrupted clean left; refuses while DOWN and a bad argument', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    await t.start('w');
    const left = path.join(t.queueDir('w'), '.trash', 'done.20200101.0000.00.000.1');
    fs.mkdirSync(path.join(left, 'job'), { recursive: true });
    fs.writeFileSync(path.join(left, 'job', 'stdio.log'), 'x'.repeat(10_000));
    expect((await clean('w')).removed.done.messages).toBe(0);
    expect(trash('w')).toEqual([]);
    expect(await t.rpc('w', 'clean', { max_age_days: -1 })).toEqual(['fail', "'max_age_days' must be a number of days >= 0, got -1"]);
    fs.writeFileSync(path.join(t.root, 'config/w.down'), '');
    expect(await t.rpc('w', 'clean', {})).toEqual(['fail', 'status: DOWN']);
  });
});

describe('disk usage in stats', () => {
  it('is measured in the background per state, as du counts it, and again after a clean', async () => {
    const spec = { name: 'w', script: 'big.sh' };
    t.addQueue(spec);
    await t.start('w');
    const done = await finish('w', [{ param1: '50000' }, { param1: '70000' }]);
    // The first stats starts the first measurement and has none yet, or it has one already.
    await waitFor(async () => (await stats('w')).disk?.states['done']?.messages === 2, 5_000, 'the first measurement');
    const disk = (await stats('w')).disk!;
    const tree = hashedTree('w', 'done');
    expect(tree.ids).toEqual(done);
    // The state directory, its minute directories, and the message directories with all they hold.
    const dirs = [path.join(t.queueDir('w'), 'done'), ...tree.minuteDirs];
    const expectedDone = dirs.reduce((sum, d) => sum + fs.lstatSync(d).blocks * 512, 0) + done.reduce((sum, id) => sum + du(hashedDir('w', 'done', id)), 0);
    expect(disk.states['done']).toEqual({ messages: 2, bytes: expectedDone });
    expect(disk.states['que']).toEqual({ messages: 0, bytes: du(path.join(t.queueDir('w'), 'que')) });
    expect(disk.bytes).toBe(Object.values(disk.states).reduce((sum, s) => sum + s.bytes, 0));
    expect(Object.keys(disk.states)).toEqual(['prep', 'que', 'run', 'done', 'err', 'relayed']);
    expect(disk.measured_at).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(disk.took_ms).toBeGreaterThanOrEqual(0);

    await clean('w', { max_age_days: 0 });
    await waitFor(async () => (await stats('w')).disk?.states['done']?.messages === 0, 5_000, 'the measurement after the clean');
    expect((await stats('w')).disk!.states['done']!.bytes).toBe(du(path.join(t.queueDir('w'), 'done')));
  });
});
