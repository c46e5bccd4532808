/**
 * The built-in cleaner end to end (docs/cleaner.md): `libexec/cleaner_script` runs as the
 * `cleaner` queue's worker for a message naming a queue (or ALLQUEUES) in param1, and
 * the queues it names are cleaned by their own processes. The outcome is what an
 * operator sees: the cleaner message's state and status, its log, and the counts of the
 * queues it cleaned.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { finishedLongAgo } from '../helpers/finished-messages.js';
import { REPO, TestRoot, useTestRoot, waitFor } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
  t.addQueue({ name: 'cleaner', script: path.join(REPO, 'libexec/cleaner_script') });
});

/** Send `n` messages to `queue` and wait until each is done. */
async function doneMessages(queue: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await t.waitState(queue, await t.send(queue, {}), 'done');
}

/** Run one cleaner message to its end: its state, status and log. */
async function runCleaner(msg: Record<string, unknown>): Promise<{ state: string; status: string; log: string }> {
  const id = await t.send('cleaner', msg);
  await waitFor(async () => ['done', 'err'].includes((await t.state('cleaner', id)) ?? ''), 15_000, 'the cleaner message to finish');
  const view = await t.message('cleaner', id);
  const log = fs.readFileSync(path.join(t.root, view['path'] as string, 'job/stdio.log'), 'utf8');
  return { state: view['state'] as string, status: view['status'] as string, log };
}

const counts = async (queue: string): Promise<Record<string, number>> => (await t.rpc(queue, 'num_messages', {})) as Record<string, number>;

describe('the cleaner queue', () => {
  it('cleans the queue named in param1, with RQ’s days from param2, and logs what it removed', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    await Promise.all([t.start('cleaner'), t.start('w')]);
    await doneMessages('w', 3);
    const kept = await runCleaner({ param1: 'w' });
    expect(kept).toMatchObject({ state: 'done', status: 'done - successfully ran this script' });
    expect(kept.log).toContain('w: removed done 0, relayed 0, err 0');
    expect(await counts('w')).toMatchObject({ done: 3 });

    const r = await runCleaner({ param1: 'w', param2: 'keep 0 days' });
    expect(r).toMatchObject({ state: 'done', status: 'done - successfully ran this script' });
    expect(r.log).toContain('done and relayed kept 0 days this time (RQ_PARAM2)');
    expect(r.log).toMatch(/w: removed done 3 \(\d+\.\d KiB\), relayed 0, err 0/);
    expect(await counts('w')).toMatchObject({ done: 0 });
  });

  it('fails a queue that does not exist with RQ’s line and exit 1, so the message is in err', async () => {
    await t.start('cleaner');
    const r = await runCleaner({ param1: 'nope' });
    expect(r.state).toBe('err');
    expect(r.status).toMatch(/^err - PROCESS EXITED IMPROPERLY - MOVING TO ERR - no completion line, and exit status was pid \d+ exit 1$/);
    expect(r.log).toContain('fail the specified queue [nope] does not exist');
  });

  it('ALLQUEUES cleans every queue, itself included, skips a DOWN one, and ends in err naming one that does not answer', async () => {
    for (const name of ['a', 'b', 'down']) t.addQueue({ name, script: 'done.sh' });
    t.addQueue({ name: 'silent', script: 'done.sh' }); // never started
    await Promise.all(['cleaner', 'a', 'b', 'down'].map((q) => t.start(q)));
    await Promise.all([doneMessages('a', 2), doneMessages('b', 1), doneMessages('down', 1)]);
    const first = await runCleaner({ param1: 'a' });
    expect(first.state).toBe('done');
    fs.writeFileSync(path.join(t.root, 'config/down.down'), '');

    const r = await runCleaner({ param1: 'ALLQUEUES', param2: '0' });
    expect(r.state).toBe('err');
    expect(r.status).toBe('err - could not clean silent (not answering)');
    expect(r.log).toMatch(/a: removed done 2 \(/);
    expect(r.log).toMatch(/b: removed done 1 \(/);
    expect(r.log).toMatch(/cleaner: removed done 1 \(/);
    expect(r.log).toContain('down: skipped, status: DOWN');
    expect(await counts('a')).toMatchObject({ done: 0 });
    expect(await counts('b')).toMatchObject({ done: 0 });
    expect(await counts('cleaner')).toMatchObject({ done: 0, err: 1 });
    expect(((await t.rpc('down', 'num_messages', {})) as Record<string, number>)['done']).toBe(1);
  });

  it('skips a queue that goes DOWN during its clean, saying what was removed before it stopped', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    const ids = finishedLongAgo(t.queueDir('w'), 3_000, 10);
    await Promise.all([t.start('cleaner'), t.start('w')]);
    const id = await t.send('cleaner', { param1: 'w' });
    // The trash is made by the first message a clean takes.
    await waitFor(() => fs.existsSync(path.join(t.queueDir('w'), '.trash')), 10_000, 'the clean of w to start');
    const pid = t.pidIn('queues/w/queue.pid')!;
    process.kill(pid, 'SIGSTOP');
    fs.writeFileSync(path.join(t.root, 'config/w.down'), '');
    process.kill(pid, 'SIGCONT');
    await t.waitState('cleaner', id, 'done', 15_000);
    const left = (await counts('w'))['done']!;
    expect(left).toBeGreaterThan(0);
    const view = await t.message('cleaner', id);
    expect(view['status']).toBe('done - successfully ran this script');
    const log = fs.readFileSync(path.join(t.root, view['path'] as string, 'job/stdio.log'), 'utf8');
    expect(log).toMatch(new RegExp(`w: skipped, status: DOWN after it removed done ${ids.length - left} \\(`));
  });
});
