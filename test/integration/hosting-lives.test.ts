/**
 * Hosted queues across their lives: what a queue keeps across a put-away and its next
 * load (dead letters, counts), what a closed queue stops doing (its cron), and what rq-mgr
 * does with hosted queues restarted twice at once, deleted while they open, or whose
 * config gains a script; a built-in queue stays loaded, so a message dropped into its
 * `que/` by hand runs. Real processes: rq-mgr, its hosts, the queues' sockets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestRoot, useTestRoot, waitFor } from '../helpers/install.js';
import { addPullQueue, openFilesOf } from '../helpers/hosting.js';
import { startWeb } from '../helpers/web.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

async function publish(queue: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = (await t.rpc(queue, 'publish', { payload: Buffer.from('x').toString('base64'), ...fields })) as [string, { id: string }];
  expect(reply[0]).toBe('ok');
  return reply[1].id;
}

async function putAway(queue: string): Promise<void> {
  const host = t.pidIn(`queues/${queue}/queue.pid`)!;
  await waitFor(() => openFilesOf(t, host, queue).length === 0, 10_000, `queue ${queue} to be put away`);
}

describe('a hosted queue put away and loaded again', () => {
  it('still shows its dead letters to the command that loads it', async () => {
    addPullQueue(t, 'dl');
    await startWeb(t, {}, { RQ_UNLOAD_MS: '200' });
    const id = await publish('dl', { tries: 1 });
    const leased = (await t.rpc('dl', 'lease', { owner: 'w', ttr_ms: 60_000 })) as [string, Array<{ id: string }>];
    expect(leased[1].map((m) => m.id)).toEqual([id]);
    expect(await t.rpc('dl', 'nack', { ref: id })).toEqual(['ok', { id, state: 'err' }]);
    expect(((await t.rpc('dl', 'dead_letter', {})) as [string, { size: number }])[1].size).toBe(1);
    await putAway('dl');
    // The first command after the put-away loads the queue: it must see what is on disk.
    expect(((await t.rpc('dl', 'dead_letter', {})) as [string, { size: number }])[1].size).toBe(1);
  });

  it('counts its done messages for the command that loads it', async () => {
    addPullQueue(t, 'dn');
    await startWeb(t, {}, { RQ_UNLOAD_MS: '200' });
    const id = await publish('dn');
    await t.rpc('dn', 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(((await t.rpc('dn', 'ack', { ref: id })) as unknown[])[0]).toBe('ok');
    const before = (await t.rpc('dn', 'num_messages', {})) as Record<string, number>;
    expect(before['done']).toBe(1);
    await putAway('dn');
    expect(((await t.rpc('dn', 'num_messages', {})) as Record<string, number>)['done']).toBe(1);
  });
});

describe('rq-mgr and a hosted queue with a schedule', () => {
  it('fires each due time once after restart_queue (the closed queue fires no more)', async () => {
    const dir = t.queueDir('cron');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ name: 'cron', script: '', num_workers: 0, schedule: [{ cron: '* * * * *' }] }));
    await startWeb(t);
    const dues = async (): Promise<number[]> => {
      const listed = (await t.rpc('cron', 'messages', { state: 'que' })) as Array<{ msg_id: string }>;
      const out: number[] = [];
      for (const { msg_id } of listed) out.push((await t.message('cron', msg_id))['due'] as number);
      return out.sort();
    };
    await waitFor(async () => (await dues()).length === 1, 10_000, 'the first cron message');
    expect(await t.mgr('restart_queue', 'cron')).toEqual(['ok', 'cron']);
    // Past the next minute: its due time fires, once.
    await waitFor(async () => (await dues()).length >= 2, 70_000, 'the next cron message');
    await new Promise((r) => setTimeout(r, 2_000));
    const all = await dues();
    expect(all.length).toBe(new Set(all).size);
  }, 90_000);
});

describe('rq-mgr and its hosts', () => {
  it('answers two restart_queue of one hosted queue sent at once, and counts no death', async () => {
    addPullQueue(t, 'twice');
    await startWeb(t);
    const within = <T>(p: Promise<T>, ms: number): Promise<T | 'no answer'> =>
      Promise.race([p, new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), ms))]);
    const replies = await within(Promise.all([t.mgr('restart_queue', 'twice'), t.mgr('restart_queue', 'twice')]), 15_000);
    expect(replies).toEqual([['ok', 'twice'], ['ok', 'twice']]);
    expect(await t.rpc('twice', 'ping', '')).toEqual(['pong']);
    expect(((await t.mgr('restarts')) as { queues: Record<string, number> }).queues['twice']).toBe(0);
  });
});

describe('rq-mgr and a hosted queue deleted while it opens', () => {
  it('serves the queue when it is made again', async () => {
    addPullQueue(t, 'first');
    await startWeb(t);
    const host = t.pidIn('queues/first/queue.pid')!;
    const mgr = t.pidIn('config/queuemgr.pid')!;
    // The host reads the open and the close together (the close crosses the open), and
    // finishes the open before rq-mgr hears that the queue was closed.
    process.kill(host, 'SIGSTOP');
    const created = t.mgr('create_pull_queue', 'ghost');
    await new Promise((r) => setTimeout(r, 200));
    expect(await t.mgr('delete_queue', 'ghost')).toEqual(['ok', 'started deleting queue']);
    process.kill(mgr, 'SIGSTOP');
    process.kill(host, 'SIGCONT');
    await new Promise((r) => setTimeout(r, 500));
    process.kill(mgr, 'SIGCONT');
    await created;
    await waitFor(async () => !((await t.mgr('queues')) as string[]).includes('ghost'), 5_000, 'the queue to be deleted');
    expect(await t.mgr('create_pull_queue', 'ghost')).toEqual(['ok', 'ghost']);
    expect(await t.rpc('ghost', 'ping', '')).toEqual(['pong']);
  });
});

describe('a queue whose config gains a script', () => {
  it('gets a process of its own at rq-mgr reload', async () => {
    addPullQueue(t, 'grows');
    await startWeb(t);
    const host = t.pidIn('queues/grows/queue.pid')!;
    t.addQueue({ name: 'grows', script: 'done.sh' });
    expect((await t.bin('rq-mgr', ['reload'])).code).toBe(0);
    await waitFor(() => t.pidIn('queues/grows/queue.pid') !== host, 5_000, 'the queue to get a process of its own');
    const own = t.pidIn('queues/grows/queue.pid')!;
    expect(fs.readFileSync(`/proc/${own}/cmdline`, 'utf8')).toMatch(/^\[rq-que\] \[grows\]/);
  });
});

describe('a hosted built-in queue', () => {
  it('is never put away, and runs a message an operator drops into que/ by hand', async () => {
    t.addQueue({ name: 'cleaner', script: path.join(process.cwd(), 'libexec/cleaner_script') });
    await startWeb(t, {}, { RQ_UNLOAD_MS: '200' });
    const host = t.pidIn('queues/cleaner/queue.pid')!;
    // Well past its idle time, it still holds its que index open: loaded.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(openFilesOf(t, host, 'cleaner')).toContain(path.join(t.queueDir('cleaner'), 'que.index'));
    const id = '20261121.0101.01.001.42';
    const staging = path.join(t.root, 'staging');
    fs.mkdirSync(staging);
    fs.writeFileSync(path.join(staging, 'msg'), JSON.stringify({ msg_id: id, dest: 'cleaner', count: 0, max_count: 15 }));
    fs.renameSync(staging, path.join(t.queueDir('cleaner'), 'que', id));
    // Watched from outside: any command would load the queue and so find it.
    await waitFor(() => !fs.existsSync(path.join(t.queueDir('cleaner'), 'que', id)), 10_000, 'the dropped message to leave que/');
  });
});
