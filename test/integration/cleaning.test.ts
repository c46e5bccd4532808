/**
 * The `clean` command and the disk usage of `stats` (queue/housekeeping.ts) on a real
 * queue process: messages that really ran and finished, limits from config.json (a
 * reload) or the command's age override, and afterwards the counts, the listings and the
 * directories as they are on disk, checked against an independent walk of the tree.
 *
 * A clean caught in the middle (joined, gone DOWN, killed) is caught without a race: the
 * queue process is stopped (SIGSTOP) while the test sets the scene, and what the test
 * relies on is checked on disk while it is stopped.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { decodePacket, encodePacket } from '../../src/rpc/wire.js';
import { idTimestamp } from '../../src/domain/ids.js';
import { normaliseCleaner } from '../../src/domain/retention.js';
import { finishedLongAgo, hashedDir as hashedPath } from '../helpers/finished-messages.js';
import { TestRoot, shortId, waitFor, useTestRoot, type QueueSpec } from '../helpers/install.js';

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
  batches: number;
  stopped?: string;
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
const hashedDir = (queue: string, state: string, id: string): string => hashedPath(t.queueDir(queue), state, id);

const trash = (queue: string): string[] => {
  try {
    return fs.readdirSync(path.join(t.queueDir(queue), '.trash'));
  } catch {
    return [];
  }
};

/** The pid of a queue's process, from its pid file. */
function queuePid(queue: string): number {
  const pid = t.pidIn(`queues/${queue}/queue.pid`);
  if (pid === undefined) throw new Error(`queue ${queue} has no pid file`);
  return pid;
}

/**
 * A request written to a queue's socket: `written` once the whole request is in the
 * kernel (so a stopped queue process finds it there when it resumes), `reply` its answer.
 */
function request(queue: string, command: string, arg: Record<string, unknown>): { written: Promise<void>; reply: Promise<unknown> } {
  const sock = net.createConnection(path.join(t.queueDir(queue), 'queue.sock'));
  const written = new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.on('connect', () => sock.write(encodePacket(`${command} ${JSON.stringify(arg)}`), () => resolve()));
  });
  const reply = new Promise<unknown>((resolve, reject) => {
    const chunks: Buffer[] = [];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('end', () => {
      const r = decodePacket(Buffer.concat(chunks), true);
      if (r.type === 'packet') resolve(JSON.parse(r.payload));
      else reject(new Error(`${command}: no reply (${r.type})`));
    });
    sock.once('error', reject);
  });
  return { written, reply };
}

/** Wait, checking at every turn of the event loop, until `cond` holds (a window a 20 ms poll could miss). */
async function waitClosely(cond: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

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
    for (const id of ids.slice(0, 4)) expect(await t.rpc('w', 'get_message_state', { msg_id: id })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
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

  it('by max_bytes, counts a file its clones share once, with the oldest of them', async () => {
    const spec = { name: 'w', script: 'done.sh' };
    t.addQueue(spec);
    await t.start('w');
    const file = path.join(t.root, 'tmp', 'shared.bin');
    fs.writeFileSync(file, Buffer.alloc(300_000, 1));
    const [, full] = (await t.rpc('w', 'prep_message', { dest: 'w' })) as [string, string];
    expect(((await t.rpc('w', 'attach_message', { msg_id: full, pathname: file })) as string[])[0]).toBe('ok');
    expect(((await t.rpc('w', 'commit_message', { msg_id: full })) as string[])[0]).toBe('ok');
    fs.rmSync(file);
    const a = shortId(full);
    await t.waitState('w', a, 'done');
    const clone = async (): Promise<string> => {
      const id = shortId(((await t.rpc('w', 'clone_message', { msg_id: a })) as [string, string])[1]);
      await t.waitState('w', id, 'done');
      return id;
    };
    await clone(); // b
    const c = await clone();
    const attached = (id: string): string => path.join(hashedDir('w', 'done', id), 'attach', 'shared.bin');
    expect(fs.statSync(attached(a)).nlink).toBe(3);
    const shared = du(attached(a));
    const own = (id: string): number => du(hashedDir('w', 'done', id)) - shared;
    // Only c's own bytes and the directories may stay: a, b, and c with the shared file must go.
    const dirs = [path.join(t.queueDir('w'), 'done'), ...hashedTree('w', 'done').minuteDirs].reduce((sum, d) => sum + fs.lstatSync(d).blocks * 512, 0);
    await reconfigure({ ...spec, cleaner: { max_bytes: dirs + own(c) - 1 } });
    const r = await clean('w');
    // Counted once per message, the shared file would look freed by a and b already, and c would stay.
    expect(r.removed.done.messages).toBe(3);
    expect(hashedTree('w', 'done').ids).toEqual([]);
  });

  it('deletes in batches of 500 and keeps the counts exact while messages keep finishing', async () => {
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
    expect(r.batches).toBe(Math.ceil(r.removed.done.messages / 500));
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

  it('cleans relayed with its own count, like done; counts, listing and disk agree', async () => {
    fs.writeFileSync(path.join(t.root, 'relays.sh'), '#!/bin/sh\necho "relayed http://elsewhere/q/x/1" >&3\n', { mode: 0o755 });
    const spec = { name: 'w', script: './relays.sh' };
    t.addQueue(spec);
    await t.start('w');
    const ids = await finish('w', [{}, {}, {}, {}], 'relayed');
    await reconfigure({ ...spec, cleaner: { max_count: 1 } });
    const r = await clean('w');
    expect(r.removed.relayed.messages).toBe(3);
    expect(r.removed.done.messages).toBe(0);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ relayed: 1, done: 0 });
    expect(await t.rpc('w', 'messages', { state: 'relayed' })).toEqual([{ msg_id: ids[3], status: 'relayed', dest: 'w', new_msg: 'http://elsewhere/q/x/1' }]);
    expect(hashedTree('w', 'relayed').ids).toEqual([ids[3]]);
    expect(trash('w')).toEqual([]);
  });

  it('ages err from when a message entered err, done from the time in its id', async () => {
    // Waits for a file `go` when param1 is `wait`; done when param1 is `ok`, else err.
    fs.writeFileSync(
      path.join(t.root, 'late.sh'),
      '#!/bin/sh\nif [ "$RQ_PARAM1" = wait ]; then while [ ! -e go ]; do sleep 0.02; done; fi\nif [ "$RQ_PARAM1" = ok ]; then echo "done ok" >&3; else echo "err late" >&3; fi\n',
      { mode: 0o755 },
    );
    const spec = { name: 'w', script: './late.sh', num_workers: 2 };
    t.addQueue(spec);
    // Created 40 and 5 days ago, waiting in que when the queue starts.
    const created = (daysAgo: number, param1: string): string => {
      const id = `${idTimestamp(new Date(Date.now() - daysAgo * 86_400_000))}.1`;
      fs.mkdirSync(path.join(t.queueDir('w'), 'que', id));
      fs.writeFileSync(path.join(t.queueDir('w'), 'que', id, 'msg'), JSON.stringify({ msg_id: id, dest: 'w', count: 0, max_count: 15, param1, due: 0 }));
      return id;
    };
    const oldErr = created(40, 'wait');
    const oldDone = created(5, 'ok');
    await t.start('w');
    await t.waitState('w', oldDone, 'done');
    const [newErr] = await finish('w', [{ param1: 'now' }], 'err');
    // oldErr enters err after newErr, on a later tick of the filesystem's clock.
    const newErrCtime = fs.statSync(path.join(t.queueDir('w'), 'err', newErr!)).ctimeMs;
    const probe = path.join(t.root, 'probe');
    await waitFor(() => {
      fs.rmSync(probe, { force: true });
      fs.writeFileSync(probe, '');
      return fs.statSync(probe).ctimeMs > newErrCtime;
    }, 5_000, 'the clock to move on');
    fs.writeFileSync(path.join(t.queueDir('w'), 'run', oldErr, 'job', 'go'), '');
    await t.waitState('w', oldErr, 'err');

    const r = await clean('w');
    // done: 5 days by its id is over 2. err: both entered err just now, within 30 days.
    expect(r.removed.done.messages).toBe(1);
    expect(r.removed.err.messages).toBe(0);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 0, err: 2 });

    // By count, the one that entered err first goes, though its id is the newer.
    await reconfigure({ ...spec, cleaner: { err: { max_count: 1 } } });
    expect((await clean('w')).removed.err.messages).toBe(1);
    expect(await t.rpc('w', 'messages', { state: 'err' })).toEqual([{ msg_id: oldErr }]);
    expect(fs.readdirSync(path.join(t.queueDir('w'), 'err'))).toEqual([oldErr]);
  });

  it('a clean asked for while one runs joins it: one clean, one report', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    const ids = finishedLongAgo(t.queueDir('w'), 1_200, 10);
    await t.start('w');
    // Both requests wait in the socket of the stopped process, and are read in the same turn when it resumes.
    const pid = queuePid('w');
    process.kill(pid, 'SIGSTOP');
    const first = request('w', 'clean', {});
    await first.written;
    const second = request('w', 'clean', { max_age_days: 20 });
    await second.written;
    process.kill(pid, 'SIGCONT');
    const [a, b] = (await Promise.all([first.reply, second.reply])) as Array<[string, CleanReply]>;
    expect(a![0]).toBe('ok');
    // The second got the first's report: its own limits (20 days, nothing to take) never ran.
    expect(b).toEqual(a);
    expect(a![1]).toMatchObject({ finished: true, batches: 3, removed: { done: { messages: 1_200 } } });
    expect(a![1].limits.done.max_age_days).toBe(2);
    expect(hashedTree('w', 'done').ids).toEqual([]);
    expect(ids).toHaveLength(1_200);
  });

  it('stops at the next batch when the queue goes DOWN, and says so; the next clean goes on', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    const ids = finishedLongAgo(t.queueDir('w'), 3_000, 10);
    await t.start('w');
    const running = request('w', 'clean', {});
    const onDisk = (): number => hashedTree('w', 'done').ids.length;
    // The trash is made by the first message a clean takes.
    await waitClosely(() => fs.existsSync(path.join(t.queueDir('w'), '.trash')), 'the first batch to be taken');
    const pid = queuePid('w');
    process.kill(pid, 'SIGSTOP');
    // Stopped with more to take: the clean has another batch ahead of it.
    expect(onDisk()).toBeGreaterThan(0);
    fs.writeFileSync(path.join(t.root, 'config/w.down'), '');
    process.kill(pid, 'SIGCONT');
    const [word, r] = (await running.reply) as [string, CleanReply];
    expect(word).toBe('ok');
    expect(r).toMatchObject({ finished: true, stopped: 'status: DOWN' });
    const left = onDisk();
    expect(left).toBeGreaterThan(0);
    expect(r.removed.done.messages).toBe(ids.length - left);
    expect(r.removed.done.messages % 500).toBe(0);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: left });
    expect(trash('w')).toEqual([]);

    fs.rmSync(path.join(t.root, 'config/w.down'));
    expect(await t.rpc('w', 'status', '')).toEqual(['UP']);
    const rest = await clean('w');
    expect(rest.stopped).toBeUndefined();
    expect(rest.removed.done.messages).toBe(left);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 0 });
    expect(fs.readdirSync(path.join(t.queueDir('w'), 'done'))).toEqual([]);
  });

  it('a crash between taking messages and deleting them loses nothing and counts nothing twice', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    const ids = finishedLongAgo(t.queueDir('w'), 1_500, 10, 8);
    await t.start('w');
    void request('w', 'clean', {}).reply.catch(() => undefined); // the queue dies before it answers
    await waitClosely(() => trash('w').length >= 250, 'a batch in the trash');
    process.kill(queuePid('w'), 'SIGSTOP');
    const inTrash = trash('w');
    // Stopped with messages taken out of done but not yet deleted.
    expect(inTrash.length).toBeGreaterThan(0);
    await t.kill9('w');
    const left = hashedTree('w', 'done').ids;
    expect(left.length).toBeLessThan(ids.length);
    for (const name of inTrash) expect(left).not.toContain(name.slice('done.'.length));

    await t.start('w');
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: left.length });
    const leftBytes = left.reduce((sum, id) => sum + du(hashedDir('w', 'done', id)), 0);
    const r = await clean('w');
    // The restarted clean counts only what it took itself: the trash went first, apart.
    expect(r.removed.done).toEqual({ messages: left.length, bytes: leftBytes });
    expect(trash('w')).toEqual([]);
    expect(await t.rpc('w', 'num_messages', {})).toMatchObject({ done: 0 });
    expect(fs.readdirSync(path.join(t.queueDir('w'), 'done'))).toEqual([]);
  });

  it('deletes the trash an interrupted clean left; refuses while DOWN and a bad argument', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    await t.start('w');
    const left = path.join(t.queueDir('w'), '.trash', 'done.20200101.0000.00.000.1');
    fs.mkdirSync(path.join(left, 'job'), { recursive: true });
    fs.writeFileSync(path.join(left, 'job', 'stdio.log'), 'x'.repeat(10_000));
    expect((await clean('w')).removed.done.messages).toBe(0);
    expect(trash('w')).toEqual([]);
    expect(await t.rpc('w', 'clean', { max_age_days: -1 })).toEqual(['fail', "'max_age_days' must be a number of days >= 0, got -1", 'RQ_BAD_REQUEST']);
    fs.writeFileSync(path.join(t.root, 'config/w.down'), '');
    expect(await t.rpc('w', 'clean', {})).toEqual(['fail', 'status: DOWN', 'RQ_QUEUE_DOWN']);
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
