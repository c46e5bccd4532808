/**
 * Cron schedules in a real queue process (docs/cron.md): a schedule's message appears
 * up to a minute before its due minute with RQ's fields, a kill -9 and restart
 * does not fire a due time twice (the record in cron.json), and a bad entry is reported
 * in `stats` while the rest of the queue works. Time-zone and DST rules are unit-tested
 * on a fixed clock (test/unit/cron.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestRoot, useTestRoot, waitFor } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

/** The queue's messages from cron, in every state (a fired message may have run already). */
async function cronMessages(queue: string): Promise<Array<Record<string, unknown>>> {
  const [, found] = (await t.rpc(queue, 'search', { query: { src: 'cron' }, exact: true })) as [string, { messages: Array<Record<string, unknown>> }];
  return found.messages;
}

describe('cron schedules', () => {
  it('queues the next minute’s message with RQ’s fields, and a restart does not fire it again', async () => {
    t.addQueue({ name: 'c', script: 'done.sh', schedule: [{ cron: '* * * * *', param1: 'cronny' }] });
    await t.start('c');
    await waitFor(async () => (await cronMessages('c')).length > 0, 10_000, 'the cron message');
    const [first] = await cronMessages('c');
    expect(first).toMatchObject({ dest: 'c', src: 'cron', param1: 'cronny', param2: null, param3: null, param4: null, count: 0, max_count: 15 });
    const due = first!['due'] as number;
    expect(due % 60).toBe(0);
    expect(due * 1000).toBeGreaterThan(Date.now() - 1000);
    expect(JSON.parse(fs.readFileSync(path.join(t.queueDir('c'), 'cron.json'), 'utf8'))).toEqual({
      [`* * * * * {"param1":"cronny","param2":null,"param3":null,"param4":null}`]: { wall: expect.any(Number), at: due * 1000, pending: first!['msg_id'] },
    });

    await t.kill9('c');
    await t.start('c');
    const stats = (await t.rpc('c', 'stats')) as { schedule: Array<{ last: number; next: number }> };
    expect(stats.schedule[0]!.last).toBeGreaterThanOrEqual(due);
    expect(stats.schedule[0]!.next).toBeGreaterThan(due);
    const dues = (await cronMessages('c')).map((m) => m['due']);
    expect(dues.filter((d) => d === due)).toHaveLength(1);
    expect(new Set(dues).size).toBe(dues.length);
  });

  it('a bad entry is named in stats and skipped; the other entries and the queue keep working', async () => {
    t.addQueue({
      name: 'c',
      script: 'done.sh',
      schedule: [{ cron: '61 * * * *' }, { cron: '* * * * *', param1: 'good' }],
    });
    await t.start('c');
    const stats = (await t.rpc('c', 'stats')) as { status: string; schedule: Array<{ error?: string; next: number | null }> };
    expect(stats.status).toBe('UP');
    expect(stats.schedule[0]).toMatchObject({ next: null, error: expect.stringMatching(/^schedule entry 1 \("61 \* \* \* \*"\): .*61/) });
    expect(stats.schedule[1]!.error).toBeUndefined();
    // The log line names the entry and the queue, once (a key given twice is a line some JSON tools refuse).
    const line = t.logOf('c').split('\n').find((l) => l.includes('invalid schedule entry skipped')) ?? '';
    expect(JSON.parse(line)).toMatchObject({ queue: 'c', entry: 1, cron: '61 * * * *' });
    expect(line.match(/"queue":/g)).toHaveLength(1);
    await waitFor(async () => (await cronMessages('c')).some((m) => m['param1'] === 'good'), 10_000, 'the good entry’s message');
    const id = await t.send('c', {});
    await t.waitState('c', id, 'done');
  });
});
