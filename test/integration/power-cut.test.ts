// A power cut loses nothing the queue acknowledged (docs/internals/durability.md): the
// journal is the commit point. A checkpoint is made (a clean stop makes one), a copy of
// each queue's directory is taken then, and the queue is started again for acknowledged
// work of every kind: creates (with attachments), commits, runs to done, run_message,
// deletes; leases, acks and nacks on a pull queue. Then every process is killed (-9) and
// what a power cut may lose is taken away, in one of two ways: every file and directory
// written since the checkpoint is gone (the tree is the copy again), or every file written
// since is cut to nothing. The journal, synced, stays; its boot line names another boot, as
// after a reboot. Started again, every acknowledged message is back in its state with its
// msg and attachments, exactly once, and what was deleted stays deleted.
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { State } from '../../src/domain/states.js';
import { queueLayout, rootLayout } from '../../src/store/layout.js';
import { TestRoot, shortId, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** The reply's value; throws on a fail reply. */
async function ok(queue: string, command: string, arg: Record<string, unknown>): Promise<unknown> {
  const reply = (await t.rpc(queue, command, arg)) as unknown[];
  if (reply?.[0] !== 'ok') throw new Error(`${command} ${JSON.stringify(arg)} → ${JSON.stringify(reply)}`);
  return reply[1];
}

/** What a message must be after the power cut: its state, a param, and its attachments. */
interface Expected {
  state: string;
  param1?: string;
  attach?: Record<string, string>;
}

/** Every message directory of a queue, by id: the states (and paths) it is found in. */
function where(queueDir: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const walk = (dir: string, state: string, depth: number): void => {
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name);
      if (!fs.statSync(p).isDirectory()) continue;
      if (depth > 0) walk(p, state, depth - 1);
      else if (!name.startsWith('_')) found.set(name, [...(found.get(name) ?? []), state]);
    }
  };
  for (const state of ['prep', 'que', 'run', 'err']) walk(path.join(queueDir, state), state, 0);
  // done/ and relayed/ are hashed: day/hour/minute/<id>
  for (const state of ['done', 'relayed']) walk(path.join(queueDir, state), state, 3);
  return found;
}

/** Every file under `dir` (not the journal or config), as paths. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile() && !['que.index', 'config.json'].includes(e.name)) out.push(p);
  }
  return out;
}

/** The journal as after a reboot: its boot lines name another boot. */
function rebootJournal(queueDir: string): void {
  const file = path.join(queueDir, 'que.index');
  const text = fs.readFileSync(file, 'utf8');
  expect(text).toMatch(/"boot":/);
  fs.writeFileSync(file, text.replace(/"boot":"[^"]*"/g, '"boot":"00000000-0000-0000-0000-000000000000"'));
}

describe.each(['lost', 'cut short'] as const)('a power cut: files written since the checkpoint %s', (loss) => {
  it('brings back every acknowledged message in its state, with its msg and attachments, once', async () => {
    t.addQueue({ name: 'p', script: 'done.sh', num_workers: 2 });
    t.addQueue({ name: 'l', script: '/nonexistent' });
    fs.writeFileSync(path.join(t.queueDir('l'), 'config.json'), JSON.stringify({ name: 'l', script: '', num_workers: 0 }));
    const pause = path.join(t.root, 'config/p.pause');
    fs.writeFileSync(pause, '');
    await t.start('p');
    await t.start('l');
    const expected = new Map<string, Expected & { queue: string }>();
    const expect1 = (queue: string, id: string, e: Expected): void => void expected.set(id, { queue, ...e });

    // Before the checkpoint: messages waiting in both queues.
    const before: string[] = [];
    for (let i = 0; i < 6; i++) before.push(await t.send('p', { param1: `a${i}` }));
    const published: string[] = [];
    for (let i = 0; i < 6; i++) published.push(((await ok('l', 'publish', { payload: b64(`job ${i}`) })) as { id: string }).id);

    // A clean stop checkpoints: the journal is left with no record to replay.
    await t.stop('p');
    await t.stop('l');
    const copies = new Map<string, string>();
    for (const q of ['p', 'l']) {
      const journal = fs.readFileSync(path.join(t.queueDir(q), 'que.index'), 'utf8');
      expect(journal).not.toMatch(/"to":/);
      const copy = path.join(t.root, `checkpoint-${q}`);
      fs.cpSync(t.queueDir(q), copy, { recursive: true, filter: (src) => !/queue\.(sock|pid)$/.test(src) });
      copies.set(q, copy);
    }
    const checkpointMs = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await t.start('p');
    await t.start('l');

    // Acknowledged work after the checkpoint.
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push(await t.send('p', { param1: `b${i}` }));
    const prepped = shortId(((await ok('p', 'prep_message', { dest: 'p', param1: 'c0' })) as string));
    const file = path.join(t.root, 'report.txt');
    fs.writeFileSync(file, 'the attached report');
    await ok('p', 'attach_message', { msg_id: prepped, pathname: file, name: 'report.txt' });
    await ok('p', 'commit_message', { msg_id: prepped });
    await ok('p', 'delete_message', { msg_id: before[0] });
    await ok('p', 'run_message', { msg_id: before[1] });
    // Run everything waiting to done, then pause again and queue more.
    fs.rmSync(pause);
    const ran = [...before.slice(1), ...made, prepped];
    for (const id of ran) await t.waitState('p', id, 'done', 20_000);
    fs.writeFileSync(pause, '');
    await ok('p', 'delete_message', { msg_id: before[2] });
    const waiting: string[] = [];
    for (let i = 0; i < 3; i++) waiting.push(await t.send('p', { param1: `d${i}` }));
    for (const [i, id] of before.entries()) if (i > 2) expect1('p', id, { state: 'done', param1: `a${i}` });
    expect1('p', before[1]!, { state: 'done', param1: 'a1' });
    for (const [i, id] of made.entries()) expect1('p', id, { state: 'done', param1: `b${i}` });
    expect1('p', prepped, { state: 'done', param1: 'c0', attach: { 'report.txt': 'the attached report' } });
    for (const [i, id] of waiting.entries()) expect1('p', id, { state: 'que', param1: `d${i}` });

    // The pull queue: three leased; one acked, one nacked back to que, one kept; one deleted; two more published.
    const leased = (await ok('l', 'lease', { owner: 'w', ttr_ms: 600_000, count: 3 })) as Array<{ id: string }>;
    expect(leased.map((j) => j.id)).toEqual(published.slice(0, 3));
    await ok('l', 'ack', { ref: published[0] });
    await ok('l', 'nack', { ref: published[1] });
    await ok('l', 'delete_message', { msg_id: published[3] });
    for (let i = 6; i < 8; i++) published.push(((await ok('l', 'publish', { payload: b64(`job ${i}`) })) as { id: string }).id);
    const states = ['done', 'que', 'run', undefined, 'que', 'que', 'que', 'que'];
    for (const [i, id] of published.entries()) {
      const state = states[i];
      if (state) expect1('l', id, { state, attach: { payload: `job ${i}` } });
    }
    const deleted = [before[0]!, before[2]!, published[3]!];

    // The power cut.
    await t.kill9('p');
    await t.kill9('l');
    for (const q of ['p', 'l']) {
      const dir = t.queueDir(q);
      if (loss === 'lost') {
        const journal = fs.readFileSync(path.join(dir, 'que.index'));
        fs.rmSync(dir, { recursive: true, force: true });
        fs.cpSync(copies.get(q)!, dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'que.index'), journal);
      } else {
        let cut = 0;
        for (const f of filesUnder(dir)) {
          if (fs.statSync(f).mtimeMs > checkpointMs) {
            fs.truncateSync(f, 0);
            cut++;
          }
        }
        expect(cut).toBeGreaterThan(5);
      }
      rebootJournal(dir);
    }

    await t.start('p');
    await t.start('l');
    for (const q of ['p', 'l']) {
      const found = where(t.queueDir(q));
      for (const [id, e] of expected) {
        if (e.queue !== q) continue;
        expect({ id, states: found.get(id) }).toEqual({ id, states: [e.state] });
        expect(await t.state(q, id)).toBe(e.state);
        const msg = await t.message(q, id);
        if (e.param1) expect(msg['param1']).toBe(e.param1);
        const dir = queueLayout(rootLayout(t.root), q).msgDir(e.state as State, id);
        for (const [name, content] of Object.entries(e.attach ?? {})) expect(fs.readFileSync(path.join(dir, 'attach', name), 'utf8')).toBe(content);
      }
      for (const id of deleted) expect(found.has(id)).toBe(false);
      // Nothing else: every message found is one expected.
      expect([...found.keys()].filter((id) => expected.get(id)?.queue !== q).sort()).toEqual([]);
    }
    expect(await t.rpc('p', 'num_messages', {})).toMatchObject({ que: 3, run: 0, done: 9, err: 0 });
    expect(await ok('l', 'pull_stats', {})).toMatchObject({ ready: 5, leased: 1, dead: 0 });
  });
});
