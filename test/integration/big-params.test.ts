/**
 * Big params in a queue process (issue 18, "Bounded resources"): a param whose JSON text
 * is over 1 KiB is not kept in memory or in `que.index`, only in the message's `msg`;
 * memory keeps a digest, so coalescing, search and get_message still see the params,
 * across a restart too (scheduling.test.ts runs blocking and coalescing with big params).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_INDEXED_PARAM_CHARS } from '../../src/store/que-index.js';
import { TestRoot, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

const MiB = 1024 * 1024;
const now = (): number => Math.floor(Date.now() / 1000);

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** A param just over what memory keeps, different for each `tag`. */
const bigParam = (tag: string): string => `${tag}:${'z'.repeat(MAX_INDEXED_PARAM_CHARS)}`;

async function searchIds(queue: string, arg: Record<string, unknown>): Promise<string[]> {
  const reply = (await t.rpc(queue, 'search', arg)) as [string, { messages: Array<{ msg_id: string }> }];
  expect(reply[0]).toBe('ok');
  return reply[1].messages.map((m) => m.msg_id).sort();
}

describe('big params', () => {
  it('keeps the params of 1,000 waiting messages of 1 MiB each out of memory and out of que.index', async () => {
    t.addQueue({ name: 'big', num_workers: 0 });
    const first = await t.start('big');
    const param1 = 'p'.repeat(MiB);
    let made = 0;
    const lane = async (): Promise<void> => {
      while (made < 1000) {
        made++;
        const reply = await t.rpc('big', 'create_message', { dest: 'big', param1 });
        expect(reply).toEqual(['ok', expect.any(String)]);
      }
    };
    await Promise.all([lane(), lane(), lane(), lane()]);
    // The params are 1,000 MiB together. An idle queue process is about 60 MB resident;
    // garbage of the last creates may not have been collected yet, hence the margin. With
    // the params in memory it was over 1,200 MB.
    const bound = 400 * MiB;
    expect(rssBytes(first.pid!)).toBeLessThan(bound);
    // One line per message, without its param: well under a MiB (it was over 1,000 MiB).
    expect(fs.statSync(path.join(t.queueDir('big'), 'que.index')).size).toBeLessThan(MiB);

    await t.kill9('big');
    const again = await t.start('big');
    expect(await t.rpc('big', 'num_messages', {})).toMatchObject({ que: 1000 });
    expect(rssBytes(again.pid!)).toBeLessThan(bound);
    const [listed] = (await t.rpc('big', 'messages', { state: 'que', offset: 0, limit: 1 })) as Array<{ msg_id: string }>;
    const [, view] = (await t.rpc('big', 'get_message', { msg_id: listed!.msg_id })) as [string, Record<string, unknown>];
    expect(view['param1']).toBe(param1);
  }, 180_000);

  it('coalesces waiting messages by a big param, also after a restart', async () => {
    t.addQueue({ name: 'c', script: 'sleep.sh', coalesce_params: [1] });
    await t.start('c');
    const m1 = await t.send('c', { param1: bigParam('fast'), due: now() + 60 });
    const m2 = await t.send('c', { param1: bigParam('fast'), due: now() + 60 });
    const other = await t.send('c', { param1: bigParam('slow'), due: now() + 60 });
    // Its JSON text is another param's text: not a duplicate.
    const text = await t.send('c', { param1: JSON.stringify(bigParam('fast')), due: now() + 60 });
    await t.kill9('c');
    await t.start('c');
    const m3 = await t.send('c', { param1: bigParam('fast'), param2: '0.2' });
    const m3Full = `http://127.0.0.1:3333/q/c/${m3}`;
    expect(await t.waitState('c', m3, 'done')).toBe('done - slept');
    expect(await t.statusOf('c', m1)).toBe(`done - duplicate ${m3Full}`);
    expect(await t.statusOf('c', m2)).toBe(`done - duplicate ${m3Full}`);
    expect(await t.state('c', other)).toBe('que');
    expect(await t.state('c', text)).toBe('que');
  });

  it('finds waiting messages by a big param, exactly or by free text, also after a restart', async () => {
    t.addQueue({ name: 's', num_workers: 0 });
    await t.start('s');
    const a = await t.send('s', { param1: bigParam('apple') });
    const b = await t.send('s', { param2: bigParam('banana') });
    const small = await t.send('s', { param1: 'apple' });
    for (const restart of [false, true]) {
      if (restart) {
        await t.kill9('s');
        await t.start('s');
      }
      expect(await searchIds('s', { query: { param1: bigParam('apple') }, exact: true })).toEqual([a]);
      expect(await searchIds('s', { query: { param1: 'apple' } })).toEqual([a, small].sort());
      expect(await searchIds('s', { text: 'banana:zzz' })).toEqual([b]);
      expect(await searchIds('s', { text: 'cherry' })).toEqual([]);
      const [, view] = (await t.rpc('s', 'get_message', { msg_id: b })) as [string, Record<string, unknown>];
      expect(view['param2']).toBe(bigParam('banana'));
    }
  });
});
