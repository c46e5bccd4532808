/**
 * A full disk, for real (a small tmpfs, test/helpers/full-disk.ts): with `log/` full every
 * process keeps serving and the log counts what it dropped once there is room again; with
 * `queues/` full, a run that cannot start goes back to que as it was, a run that cannot
 * finish waits, every front door refuses new messages with RQ_NO_SPACE in its own words,
 * nothing dies, and once space is freed everything drains without a restart, with every
 * acknowledged message there exactly once and whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestRoot, childrenOf, pidAlive, shortId, useTestRoot, waitFor } from '../helpers/install.js';
import { smallDisk, spareContent } from '../helpers/full-disk.js';
import { startProtocols } from '../helpers/protocols.js';
import { startWeb, type Web } from '../helpers/web.js';
import { WorkqClient } from '../helpers/workq-client.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

/** rq-mgr's pid and its children's (the queue processes and the web process), sorted. */
function processes(): number[] {
  const mgr = t.pidIn('config/queuemgr.pid')!;
  return [mgr, ...childrenOf(mgr)].sort((a, b) => a - b);
}

/** Every process is the one it was, alive, and rq-mgr restarted nothing. */
async function sameProcesses(before: number[]): Promise<void> {
  expect(processes()).toEqual(before);
  expect(before.every(pidAlive)).toBe(true);
  expect(await t.mgr('ping')).toEqual(['pong']);
  expect(await t.mgr('restarts')).toMatchObject({ web: 0 });
  for (const n of Object.values(((await t.mgr('restarts')) as { queues: Record<string, number> }).queues)) expect(n).toBe(0);
}

/** POST a message to the web's new_message as JSON; its short id (throws on anything but `["ok", id]`). */
async function sendByWeb(web: Web, queue: string, msg: Record<string, unknown> = {}): Promise<string> {
  const res = await web.postJson(`/q/${queue}/new_message`, { dest: queue, ...msg });
  const body = (await res.json()) as [string, string];
  if (res.status !== 200 || body[0] !== 'ok') throw new Error(`new_message: ${res.status} ${JSON.stringify(body)}`);
  return shortId(body[1]);
}

/** The lines of log/rq.log, each parsed (a line that is not whole JSON fails the test). */
function logLines(): Array<Record<string, unknown>> {
  const text = fs.readFileSync(path.join(t.root, 'log/rq.log'), 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Every message directory of a queue, in every state: id → the states it is in. */
function onDisk(queue: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const walk = (dir: string, state: string, depth: number): void => {
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith('_') || name.startsWith('.')) continue;
      const p = path.join(dir, name);
      if (fs.existsSync(path.join(p, 'msg'))) {
        const msg = JSON.parse(fs.readFileSync(path.join(p, 'msg'), 'utf8')) as { msg_id: string };
        expect(msg.msg_id).toBe(name);
        found.set(name, [...(found.get(name) ?? []), state]);
      } else if (depth < 4 && fs.statSync(p).isDirectory()) walk(p, state, depth + 1);
    }
  };
  for (const state of ['prep', 'que', 'run', 'done', 'err', 'relayed']) walk(path.join(t.queueDir(queue), state), state, 0);
  return found;
}

describe('log/ on a full filesystem', () => {
  it('keeps every process serving, and logs how many lines it dropped once there is room', async () => {
    const disk = smallDisk(path.join(t.root, 'log'), 1 << 20);
    t.addQueue({ name: 'q', script: 'done.sh', num_workers: 2 });
    const web = await startWeb(t);
    const before = processes();
    disk.fill();
    // Each run logs `run ended` through rq-mgr: many times what the log's last page holds.
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(await sendByWeb(web, 'q'));
    for (const id of ids) await t.waitState('q', id, 'done');
    await sameProcesses(before);

    disk.free();
    // The count comes after the end of the line a failed write cut short, if any: from then on every line is whole.
    await waitFor(() => /"msg":"\d+ log lines? dropped \(ENOSPC\)"/.test(fs.readFileSync(path.join(t.root, 'log/rq.log'), 'utf8')), 10_000, 'the count of dropped lines');
    const dropLine = logLines().find((l) => /dropped/.test(String(l['msg'])))!;
    expect(dropLine).toMatchObject({ level: 40, component: 'rq-mgr', pid: before[0] });
    // What was written of the runs, and what was dropped, make up every run.
    const ended = logLines().filter((l) => l['msg'] === 'run ended' && ids.includes(String(l['msg_id'])));
    expect(ended.length + Number(dropLine['dropped'])).toBeGreaterThanOrEqual(ids.length);
    expect(ended.length).toBeLessThan(ids.length);
    // Logging goes on after it.
    const after = await sendByWeb(web, 'q');
    await t.waitState('q', after, 'done');
    await waitFor(() => logLines().some((l) => l['msg_id'] === after && l['msg'] === 'run ended'), 10_000, 'a line after the count');
    await sameProcesses(before);
  });
});

describe('queues/ on a full filesystem', () => {
  /** The count of each state of a queue. */
  const counts = async (queue: string): Promise<Record<string, number>> => (await t.rpc(queue, 'num_messages', {})) as Record<string, number>;

  /** Every line of a queue's que index is whole JSON. */
  const wholeIndex = (queue: string): void => {
    for (const line of fs.readFileSync(path.join(t.queueDir(queue), 'que.index'), 'utf8').split('\n')) if (line !== '') JSON.parse(line);
  };

  it('puts a run that cannot start back in que, keeps one that cannot finish in run, and drains them once there is room', async () => {
    const disk = smallDisk(path.join(t.root, 'queues'), 8 << 20);
    t.addQueue({ name: 'q', script: 'sleep.sh', num_workers: 2 });
    t.addQueue({ name: 'w', script: 'wait-go-wide.sh' });
    const web = await startWeb(t);
    // A run under way when the disk fills, which ends while it is full with a status
    // that takes more room than its pid file gives back.
    const long = await sendByWeb(web, 'w', { param1: '16384' });
    const longDir = path.join(t.queueDir('w'), 'run', long);
    await waitFor(() => fs.existsSync(path.join(longDir, 'pid')), 10_000, 'the long run to start');
    // Messages waiting (the queue paused) when the disk fills.
    fs.writeFileSync(path.join(t.root, 'config/q.pause'), '');
    await waitFor(async () => JSON.stringify(await t.rpc('q', 'status', '')) === '["PAUSE"]', 10_000, 'the pause');
    const waiting: string[] = [];
    for (let i = 0; i < 10; i++) waiting.push(await sendByWeb(web, 'q', { param2: '0.01' }));
    const before = processes();

    disk.fill();
    fs.rmSync(path.join(t.root, 'config/q.pause'));
    fs.writeFileSync(path.join(longDir, 'job/go'), '');

    // Runs are tried, again and again, and cannot start: each goes back to que as it was
    // (none to err, count unchanged, no file left from the try but its job/).
    const spawnFailures = async (): Promise<number> => ((await t.rpc('q', 'stats', '')) as { spawn_failures: number }).spawn_failures;
    await waitFor(async () => (await spawnFailures()) >= 4, 15_000, 'starts to be tried twice over');
    await waitFor(
      async () => {
        const n = await counts('q');
        return n['que'] === waiting.length && n['run'] === 0 && n['err'] === 0;
      },
      10_000,
      'every one of them back in que',
    );
    for (const id of waiting) expect(await t.message('q', id)).toMatchObject({ count: 0 });
    for (const id of waiting) expect(fs.readdirSync(path.join(t.queueDir('q'), 'que', id)).filter((f) => !['msg', 'job'].includes(f))).toEqual([]);
    // The long run has ended (its worker gone, its pid file removed) and waits in run for its move to be written.
    await waitFor(() => !fs.existsSync(path.join(longDir, 'pid')), 10_000, 'the long run to end');
    expect(await t.state('w', long)).toBe('run');
    expect(await counts('w')).toMatchObject({ run: 1, done: 0, err: 0 });
    await sameProcesses(before);

    disk.free();
    // No restart: the waiting messages run, the long run's end is written, new messages are taken.
    for (const id of waiting) await t.waitState('q', id, 'done', 20_000);
    const longStatus = await t.waitState('w', long, 'done');
    expect(longStatus === `done - ${'x'.repeat(16384)}`, `the long run's status: ${longStatus.slice(0, 40)}…`).toBe(true);
    const later = await sendByWeb(web, 'q', { param2: '0.01' });
    await t.waitState('q', later, 'done');
    await sameProcesses(before);

    // Nothing lost, nothing twice, nothing torn: on disk, and after a restart's recovery.
    const acknowledged = [...waiting, later];
    const expectWhole = (): void => {
      const q = onDisk('q');
      expect([...q.keys()].sort()).toEqual([...acknowledged].sort());
      for (const id of acknowledged) expect(q.get(id)).toEqual(['done']);
      expect(Object.fromEntries(onDisk('w'))).toEqual({ [long]: ['done'] });
      for (const queue of ['q', 'w']) wholeIndex(queue);
    };
    expectWhole();
    for (const queue of ['q', 'w']) expect(await t.mgr('restart_queue', queue)).toEqual(['ok', queue]);
    expect(await counts('q')).toMatchObject({ prep: 0, que: 0, run: 0, err: 0, done: acknowledged.length });
    expect(await counts('w')).toMatchObject({ prep: 0, que: 0, run: 0, err: 0, done: 1 });
    expectWhole();
  });

  it('refuses a new message on every front door with RQ_NO_SPACE, in its own words, and takes it once there is room', async () => {
    const disk = smallDisk(path.join(t.root, 'queues'), 8 << 20);
    t.addQueue({ name: 'q', script: 'done.sh' });
    const TOKEN = 'tok-test-0123456789abcdef';
    const doors = await startProtocols(t, { lmstfy: { tokens: { test: [TOKEN] } }, workq: {}, cloudq: {}, rqms: {} });
    const { web } = doors;
    const lmstfy = (body: string): Promise<Response> => fetch(`${doors.base('lmstfy')}/api/test/lq`, { method: 'PUT', headers: { 'X-Token': TOKEN }, body });
    const cloudq = (): Promise<Response> => fetch(`${doors.base('cloudq')}/cq`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ job: { klass: 'K', args: [1] } }) });
    const rqms = (id: string): Promise<Response> => fetch(`${doors.base('rqms')}/rq?id=${id}`, { method: 'POST', body: '{"n":1}' });
    const workq = await WorkqClient.connect(doors.port('workq'));
    const uuid = (n: number): string => `6ba7b810-9dad-41d1-80b4-${String(n).padStart(12, '0')}`;
    try {
      // Each pull queue is made, with a message in it, while there is room.
      const first = await sendByWeb(web, 'q');
      expect((await lmstfy('one')).status).toBe(201);
      expect((await workq.add(uuid(1), 'wq', 60_000, 600_000, 'one')).text).toBe('+OK\r\n');
      expect((await cloudq()).status).toBe(200);
      expect((await rqms('one')).status).toBe(201);
      await t.waitState('q', first, 'done');
      const before = processes();

      disk.fill();
      const text = 'no space left on device: queues/q';
      let res = await web.postJson('/q/q/new_message', { dest: 'q' });
      expect([res.status, await res.text()]).toEqual([507, `507 - ${text}`]);
      res = await web.postJson('/q/q/new_message?x_format=json', { dest: 'q' });
      expect([res.status, await res.json()]).toEqual([507, ['fail', text]]);
      expect(await t.rpc('q', 'create_message', { dest: 'q' })).toEqual(['fail', text, 'RQ_NO_SPACE']);
      const cli = await t.bin('rq', ['sendmesg', '--dest', 'q']);
      expect([cli.code, cli.stdout]).toEqual([1, `fail ${text}\n`]);
      res = await lmstfy('two');
      expect([res.status, await res.json()]).toEqual([507, { error: 'no space left on device: queues/test.lq' }]);
      expect((await workq.add(uuid(2), 'wq', 60_000, 600_000, 'two')).text).toBe('-SERVER-ERROR no space left on device: queues/wq\r\n');
      res = await cloudq();
      expect([res.status, await res.json()]).toEqual([507, { status: 'error', message: 'no space left on device: queues/cq' }]);
      res = await rqms('two');
      expect([res.status, await res.text()]).toEqual([507, 'I am afraid there is no room left to put it. (no space left on device: queues/rq)']);
      // Nothing of the refused messages was made.
      expect(await counts('q')).toMatchObject({ prep: 0, que: 0, run: 0, done: 1 });
      // Only directories made ahead for new messages, if any: empty, or an empty msg.
      const prep = path.join(t.queueDir('q'), 'prep');
      for (const name of fs.readdirSync(prep)) expect([name, spareContent(path.join(prep, name))]).toEqual([name, 'spare']);
      await sameProcesses(before);

      disk.free();
      await t.waitState('q', await sendByWeb(web, 'q'), 'done');
      expect((await lmstfy('three')).status).toBe(201);
      expect((await workq.add(uuid(3), 'wq', 60_000, 600_000, 'three')).text).toBe('+OK\r\n');
      expect((await cloudq()).status).toBe(200);
      expect((await rqms('three')).status).toBe(201);
      await sameProcesses(before);
      // Each pull queue holds its two messages, once and whole.
      for (const queue of ['test.lq', 'wq', 'cq', 'rq']) {
        expect([...onDisk(queue).values()].flat()).toHaveLength(2);
        wholeIndex(queue);
      }
      // A queue without a script starts no runs: it says the disk is full, then, at the first write that works, that it has room.
      const said = (queue: string): unknown[] => logLines().filter((l) => l['queue'] === queue).map((l) => l['msg']);
      for (const queue of ['test.lq', 'wq', 'cq', 'rq']) {
        await waitFor(() => said(queue).includes('the disk has room again'), 10_000, `queue ${queue} to say the disk has room`);
        expect(said(queue)).toContain('the disk is full: writes are refused until one works again, tried every second');
      }
    } finally {
      workq.destroy();
    }
  });
});
