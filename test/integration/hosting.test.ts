/**
 * Queues hosted together: pull queues and the built-in queues share a host process,
 * each keeping its own socket (RQ's framing), pid file (the host's pid) and data; a
 * queue with a script of its own keeps its own process. An idle hosted queue is put
 * away (it holds no file open) and its next command loads it again; a host killed with
 * -9 loses nothing. rq-mgr notices a queue directory made by hand, and a front door
 * added to config.json, without a reload.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestRoot, freePort, pidAlive, useTestRoot, waitFor } from '../helpers/install.js';
import { addPullQueue, openFilesOf } from '../helpers/hosting.js';
import { startWeb } from '../helpers/web.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

function commandLine(pid: number): string {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
}

async function publish(queue: string, body: string): Promise<string> {
  const reply = (await t.rpc(queue, 'publish', { payload: Buffer.from(body).toString('base64') })) as [string, { id: string }];
  expect(reply[0]).toBe('ok');
  return reply[1].id;
}

describe('queues hosted together', () => {
  it('serves pull queues and the built-in queues from one host process, each on its own socket, and script queues from their own', async () => {
    for (const q of ['pa', 'pb', 'pc']) addPullQueue(t, q);
    t.addQueue({ name: 'scripted', script: 'done.sh' });
    t.addQueue({ name: 'cleaner', script: path.join(process.cwd(), 'libexec/cleaner_script') });
    await startWeb(t);
    const pids = ['pa', 'pb', 'pc', 'cleaner'].map((q) => t.pidIn(`queues/${q}/queue.pid`)!);
    expect(new Set(pids).size).toBe(1);
    expect(commandLine(pids[0]!)).toMatch(/^\[rq-host\]/);
    const own = t.pidIn('queues/scripted/queue.pid')!;
    expect(own).not.toBe(pids[0]);
    expect(commandLine(own)).toMatch(/^\[rq-que\] \[scripted\]/);
    // Each hosted queue is a queue of its own: its socket, its messages.
    for (const q of ['pa', 'pb', 'pc']) expect(await t.rpc(q, 'ping', '')).toEqual(['pong']);
    const id = await publish('pb', 'hello');
    expect(fs.readdirSync(path.join(t.queueDir('pb'), 'que'))).toEqual([id]);
    expect(fs.readdirSync(path.join(t.queueDir('pa'), 'que'))).toEqual([]);
    expect(((await t.rpc('pa', 'get_message', { msg_id: id })) as unknown[])[0]).toBe('fail');
  });

  it('puts an idle queue away (no file held open) and loads it again on its next command', async () => {
    addPullQueue(t, 'idle');
    await startWeb(t, {}, { RQ_UNLOAD_MS: '200' });
    const host = t.pidIn('queues/idle/queue.pid')!;
    const first = await publish('idle', 'one');
    // A waiting message keeps it loaded: its que index journal is open.
    expect(openFilesOf(t, host, 'idle')).toContain(path.join(t.queueDir('idle'), 'que.index'));
    const leased = (await t.rpc('idle', 'lease', { owner: 'w', ttr_ms: 60_000 })) as [string, Array<{ id: string }>];
    expect(leased[1].map((m) => m.id)).toEqual([first]);
    expect(((await t.rpc('idle', 'ack', { ref: first })) as unknown[])[0]).toBe('ok');
    await waitFor(() => openFilesOf(t, host, 'idle').length === 0, 10_000, 'the idle queue to be put away');
    // Put away, it still answers stats with its counts, without loading.
    const stats = (await t.rpc('idle', 'stats', {})) as { pid: number; counts: Record<string, number> };
    expect(stats.pid).toBe(host);
    expect(stats.counts).toMatchObject({ que: 0, run: 0 });
    expect(openFilesOf(t, host, 'idle')).toEqual([]);
    // Its next command loads it, recovery included.
    const second = await publish('idle', 'two');
    expect(await t.rpc('idle', 'get_message_state', { msg_id: second })).toEqual(['ok', 'que']);
    expect(openFilesOf(t, host, 'idle').length).toBeGreaterThan(0);
  });

  it('loses nothing when the host is killed with -9: rq-mgr starts another and every queue answers with its messages', async () => {
    for (const q of ['ka', 'kb']) addPullQueue(t, q);
    await startWeb(t);
    const ids = { ka: await publish('ka', 'a'), kb: await publish('kb', 'b') };
    const host = t.pidIn('queues/ka/queue.pid')!;
    process.kill(host, 'SIGKILL');
    await waitFor(() => !pidAlive(host), 5_000, 'the host to die');
    await waitFor(async () => {
      const pid = t.pidIn('queues/ka/queue.pid');
      return pid !== host && (await t.rpc('ka', 'ping', '')) !== null && (await t.rpc('kb', 'ping', '')) !== null;
    }, 10_000, 'a new host to serve both queues');
    for (const [q, id] of Object.entries(ids)) expect(await t.rpc(q, 'get_message_state', { msg_id: id })).toEqual(['ok', 'que']);
  });
});

describe('rq-mgr notices changes without a reload', () => {
  it('serves a queue directory made by hand once its config.json is in place', async () => {
    await startWeb(t);
    const dir = t.queueDir('byhand');
    fs.mkdirSync(dir);
    // The directory alone is not a queue yet.
    await new Promise((r) => setTimeout(r, 300));
    expect(await t.rpc('byhand', 'ping', '')).toBeNull();
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ name: 'byhand', script: '', num_workers: 0 }));
    await waitFor(async () => (await t.rpc('byhand', 'ping', '')) !== null, 10_000, 'the new queue to answer');
    expect(await t.mgr('queues')).toContain('byhand');
  });

  it('opens a front door added to config.json', async () => {
    await startWeb(t);
    const port = await freePort();
    t.setMainConfig({ protocols: { cloudq: { port } } });
    const accepts = (): Promise<boolean> =>
      new Promise((resolve) => {
        const sock = net.connect(port, '127.0.0.1');
        sock.once('connect', () => {
          sock.destroy();
          resolve(true);
        });
        sock.once('error', () => resolve(false));
      });
    await waitFor(accepts, 10_000, 'the Cloudq door to open');
  });
});
