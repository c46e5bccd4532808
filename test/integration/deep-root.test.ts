/**
 * An install root deep in the filesystem, where the Unix socket paths (rq-mgr's
 * `config/queuemgr.sock`, each queue's `queue.sock`) are longer than a socket address
 * holds (107 bytes): rq-mgr, the queue processes, the web process, bin/rq from another
 * directory, and the tests' own RPC all reach the sockets (src/rpc/wire.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRq } from '../helpers/cli.js';
import { TestRoot, shortId } from '../helpers/install.js';

/** Every socket file under `dir`. */
function sockets(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isSocket()).map((d) => path.join(d.parentPath, d.name));
}

describe('an install root whose socket paths are over 107 bytes', () => {
  let parent: string | undefined;
  let t: TestRoot | undefined;
  let passed = false;
  afterEach(async () => {
    await t?.cleanup(passed);
    if (passed && parent) fs.rmSync(parent, { recursive: true, force: true });
  });

  it('rq-mgr, its queues, the web and bin/rq work there', async () => {
    parent = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-deep-'));
    const deep = path.join(parent, 'd'.repeat(50), 'e'.repeat(50));
    fs.mkdirSync(deep, { recursive: true });
    t = new TestRoot(deep);
    const mgrSocket = path.join(t.root, 'config/queuemgr.sock');
    expect(Buffer.byteLength(path.join(t.root, 'queues/q1/queue.sock'))).toBeGreaterThan(107);
    t.addQueue({ name: 'q1', script: 'done.sh' });
    const port = await t.usePort();

    const start = await t.bin('rq-mgr', ['start']);
    expect(start).toMatchObject({ code: 0, stdout: expect.stringMatching(/^queuemgr: process with pid \d+ started\.\n$/) });
    expect((await t.bin('rq-mgr', ['status'])).code).toBe(0);
    expect(await t.mgr('queues')).toEqual(['q1']);
    expect(await t.rpc('q1', 'ping', '')).toEqual(['pong']);
    // Each socket is where its path says, none at a path cut short.
    expect(sockets(parent).sort()).toEqual([mgrSocket, path.join(t.queueDir('q1'), 'queue.sock')].sort());

    const id = await t.send('q1', {});
    await t.waitState('q1', id, 'done');
    // bin/rq from a directory far from the root.
    const sent = await runRq(t.root, ['sendmesg', '--dest', 'q1'], { cwd: '/' });
    expect(sent).toMatchObject({ code: 0, stdout: expect.stringMatching(/^ok \S+\n$/) });
    await t.waitState('q1', shortId(sent.stdout.trim()), 'done');
    // The web asks rq-mgr and the queue.
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toMatch(/QUEUEMGR:.*OPERATIONAL/);
    expect(await (await fetch(`http://127.0.0.1:${port}/q/q1.json`)).json()).toMatchObject({ status: 'UP', ping: 'pong', done_size: 2 });
    // rq-mgr starts a new queue and waits for it to answer.
    expect(await t.mgr('create_queue', JSON.stringify({ name: 'q2', script: './scripts/done.sh', num_workers: 1 }))).toEqual(['success', 'queue created - awesome']);
    expect(await t.rpc('q2', 'ping', '')).toEqual(['pong']);

    expect((await t.bin('rq-mgr', ['stop'])).code).toBe(0);
    expect(sockets(parent)).toEqual([]);
    passed = true;
  });
});
