/**
 * The scheduler: worker slots, due times, blocking keys and
 * coalescing, observed through a real queue process. A scheduler pass runs before
 * create_message replies, so a state is asserted at once; a run that must last until
 * the test says so uses wait-go.sh.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_INDEXED_PARAM_CHARS } from '../../src/store/que-index.js';
import { TestRoot, waitFor, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

const now = (): number => Math.floor(Date.now() / 1000);

/** Let a wait-go.sh run finish. */
async function go(queue: string, id: string): Promise<void> {
  const [, status] = (await t.rpc(queue, 'get_message_status', { msg_id: id })) as [string, { path: string }];
  fs.writeFileSync(path.join(t.root, status.path, 'job', 'go'), '');
}

describe('scheduling', () => {
  it('a due message is already running when create_message answers', async () => {
    t.addQueue({ name: 's', script: 'wait-go.sh', num_workers: 2 });
    await t.start('s');
    const a = await t.send('s', {});
    expect(await t.state('s', a)).toBe('run');
    const b = await t.send('s', {});
    expect(await t.state('s', b)).toBe('run');
    const c = await t.send('s', {});
    expect(await t.state('s', c)).toBe('que');
    expect(await t.rpc('s', 'num_messages', {})).toMatchObject({ que: 1, run: 2 });
  });

  it('waits for the due time, then runs at once', async () => {
    t.addQueue({ name: 's', script: 'done.sh' });
    await t.start('s');
    const id = await t.send('s', { due: now() + 2 });
    expect(await t.state('s', id)).toBe('que');
    await t.waitState('s', id, 'done');
  });

  // A param over 1 KiB of JSON text is known to the queue process by its digest only (que-index.ts).
  for (const [size, param] of [
    ['small', (s: string): string => s],
    ['big', (s: string): string => `${s}:${'z'.repeat(MAX_INDEXED_PARAM_CHARS)}`],
  ] as const) {
    it(`blocking_params: one running message per key (test_message_blocking), ${size} params`, async () => {
      t.addQueue({ name: 'b', script: 'wait-go.sh', num_workers: 3, blocking_params: [1] });
      await t.start('b');
      const a1 = await t.send('b', { param1: param('a') });
      const b1 = await t.send('b', { param1: param('b') });
      const a2 = await t.send('b', { param1: param('a') });
      expect([await t.state('b', a1), await t.state('b', b1), await t.state('b', a2)]).toEqual(['run', 'run', 'que']);
      await go('b', a1);
      await t.waitState('b', a1, 'done');
      await waitFor(async () => (await t.state('b', a2)) !== 'que', 10_000, 'the blocked message to start');
      expect(await t.state('b', b1)).toBe('run');
    });

    it(`coalescing: a starting message swallows its waiting duplicates, whatever their due time, ${size} params`, async () => {
      t.addQueue({ name: 'c', script: 'sleep.sh', coalesce_params: [1] });
      await t.start('c');
      const m1 = await t.send('c', { param1: param('fast'), due: now() + 30 });
      const m2 = await t.send('c', { param1: param('fast'), due: now() + 30 });
      const other = await t.send('c', { param1: param('slow'), due: now() + 30 });
      const m3 = await t.send('c', { param1: param('fast'), due: now() - 2, param2: '0.2' });
      const m3Full = `http://127.0.0.1:3333/q/c/${m3}`;
      expect(await t.rpc('c', 'num_messages', {})).toMatchObject({ que: 1, run: 1 });
      expect(await t.rpc('c', 'run_message', { msg_id: m1 })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
      expect(await t.waitState('c', m3, 'done')).toBe('done - slept');
      expect(await t.statusOf('c', m1)).toBe(`done - duplicate ${m3Full}`);
      expect(await t.statusOf('c', m2)).toBe(`done - duplicate ${m3Full}`);
      expect(await t.message('c', m1)).toMatchObject({ dup: m3Full });
      expect((await t.message('c', m3))['dups']).toEqual(expect.arrayContaining([`http://127.0.0.1:3333/q/c/${m1}`, `http://127.0.0.1:3333/q/c/${m2}`]));
      expect(await t.state('c', other)).toBe('que');
    });
  }

  it('coalescing: when the runner fails, its duplicates go back to que', async () => {
    t.addQueue({ name: 'c', script: 'err.sh', coalesce_params: [1] });
    await t.start('c');
    const d = await t.send('c', { param1: 'k', due: now() + 60 });
    const m = await t.send('c', { param1: 'k' });
    expect(await t.waitState('c', m, 'err')).toBe('err - by design');
    expect(await t.state('c', d)).toBe('que');
    expect(await t.rpc('c', 'messages', { state: 'que' })).toEqual([expect.objectContaining({ msg_id: d })]);
  });

  it('num_workers 0 runs nothing (RQ default)', async () => {
    t.addQueue({ name: 'z', script: 'done.sh', num_workers: 0 });
    await t.start('z');
    const id = await t.send('z', {});
    expect(await t.state('z', id)).toBe('que');
  });
});
