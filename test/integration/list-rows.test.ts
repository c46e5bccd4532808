/**
 * The `rows` command (the queue page's listing) on a real queue process: filters by
 * param, src, free text and creation time, sorts, paging and the matching count, the
 * run fields of finished messages (started, finished, duration, exit) kept across a
 * kill -9, and bad arguments refused with RQ_BAD_REQUEST naming the field.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { ListRow, RowsReply } from '../../src/rpc/queue-api.js';
import { TestRoot, shortId, useTestRoot, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

async function rows(queue: string, arg: Record<string, unknown>): Promise<RowsReply> {
  const reply = (await t.rpc(queue, 'rows', arg)) as ['ok', RowsReply];
  expect(reply[0]).toBe('ok');
  return reply[1];
}
const ids = (r: RowsReply): string[] => r.rows.map((row: ListRow) => row.msg_id);

describe('rows', () => {
  it('filters waiting messages by param, src and text, pages them and counts the matches', async () => {
    t.addQueue({ name: 'wait', script: 'done.sh', num_workers: 0 });
    await t.start('wait');
    const made: string[] = [];
    for (let i = 0; i < 12; i++) {
      made.push(shortId(await t.send('wait', { param1: `customer-${i % 3}`, param2: { n: i }, src: i < 4 ? 'billing' : 'web' })));
    }
    const all = await rows('wait', { state: 'que' });
    expect(all.total).toBe(12);
    expect(all.matching).toBe(12);
    expect(ids(all)).toEqual(made);
    expect(all.rows[0]).toMatchObject({ params: ['customer-0', '{"n":0}', null, null], src: 'billing', count: 0, status: 'que', started: null, exit: null });
    expect(all.rows[0]!.created).toBeGreaterThan(Date.now() - 60_000);

    const one = await rows('wait', { state: 'que', filter: { param1: 'customer-1' } });
    expect(one.matching).toBe(4);
    expect(ids(one)).toEqual(made.filter((_, i) => i % 3 === 1));
    expect((await rows('wait', { state: 'que', filter: { src: 'billing' } })).matching).toBe(4);
    // Free text: in a param (a non-string one as JSON), src, the id or the status text.
    expect(ids(await rows('wait', { state: 'que', filter: { text: '"n":11' } }))).toEqual([made[11]]);
    expect((await rows('wait', { state: 'que', filter: { text: 'bill' } })).matching).toBe(4);
    expect(ids(await rows('wait', { state: 'que', filter: { text: made[5]! } }))).toEqual([made[5]]);
    expect((await rows('wait', { state: 'que', filter: { text: 'no-such-text' } })).matching).toBe(0);
    // Both: every field must match.
    expect((await rows('wait', { state: 'que', filter: { param1: 'customer-0', src: 'web' } })).matching).toBe(2);

    const page2 = await rows('wait', { state: 'que', filter: { src: 'web' }, offset: 5, limit: 5 });
    expect(page2.matching).toBe(8);
    expect(ids(page2)).toEqual(made.slice(4).slice(5));
    expect(ids(await rows('wait', { state: 'que', sort: '-created', limit: 3 }))).toEqual(made.slice(-3).reverse());

    const now = Math.floor(Date.now() / 1000);
    expect((await rows('wait', { state: 'que', filter: { from: now - 3600 } })).matching).toBe(12);
    expect((await rows('wait', { state: 'que', filter: { to: now - 3600 } })).matching).toBe(0);
  });

  it('lists finished runs with started, finished, duration and exit, sorted by duration, across a kill -9', async () => {
    t.addQueue({ name: 'fin', script: 'sleep.sh', num_workers: 1 });
    await t.start('fin');
    const slow = shortId(await t.send('fin', { param1: 'slow', param2: '0.8' }));
    const fast = shortId(await t.send('fin', { param1: 'fast', param2: '0.05' }));
    const mid = shortId(await t.send('fin', { param1: 'mid', param2: '0.4' }));
    await waitFor(async () => (await rows('fin', { state: 'done' })).total === 3, 15_000, 'three runs done');
    const check = async (): Promise<void> => {
      const byDuration = await rows('fin', { state: 'done', sort: 'duration' });
      expect(ids(byDuration)).toEqual([fast, mid, slow]);
      expect(ids(await rows('fin', { state: 'done', sort: '-duration' }))).toEqual([slow, mid, fast]);
      const s = byDuration.rows[2]!;
      expect(s).toMatchObject({ params: ['slow', '0.8', null, null], exit: '0', count: 0, status: 'done - slept' });
      expect(s.duration_ms).toBeGreaterThanOrEqual(800);
      expect(s.finished! - s.started!).toBe(s.duration_ms);
      expect(ids(await rows('fin', { state: 'done', filter: { text: 'mid' } }))).toEqual([mid]);
      expect(ids(await rows('fin', { state: 'done', filter: { param2: '0.0' } }))).toEqual([fast]);
    };
    await check();
    await t.kill9('fin');
    await t.start('fin');
    await check();
  });

  it('finds err messages by their status text', async () => {
    t.addQueue({ name: 'bad', script: 'err.sh', num_workers: 1 });
    await t.start('bad');
    const a = shortId(await t.send('bad', { param1: 'a' }));
    await waitFor(async () => (await rows('bad', { state: 'err' })).total === 1, 10_000, 'one err');
    const found = await rows('bad', { state: 'err', filter: { text: 'by design' } });
    expect(ids(found)).toEqual([a]);
    expect(found.rows[0]).toMatchObject({ status: 'err - by design', exit: '0', count: 0 });
  });

  it('refuses bad arguments, naming the field', async () => {
    t.addQueue({ name: 'args', script: 'done.sh', num_workers: 0 });
    await t.start('args');
    const fail = (text: string): unknown[] => ['fail', text, 'RQ_BAD_REQUEST'];
    expect(await t.rpc('args', 'rows', { state: 'nope' })).toEqual(fail(`'state' must be one of prep, que, run, done, err, relayed, got "nope"`));
    expect(await t.rpc('args', 'rows', { state: 'que', filter: { param1: 3 } })).toEqual(fail(`'filter.param1' must be a non-empty string, got 3`));
    expect(await t.rpc('args', 'rows', { state: 'que', filter: { from: 'x' } })).toEqual(fail(`'filter.from' must be a number (epoch seconds), got "x"`));
    expect(await t.rpc('args', 'rows', { state: 'que', filter: { colour: 'red' } })).toEqual(fail(`'filter' has no field 'colour' (it has param1, param2, param3, param4, src, text, from, to)`));
    expect(await t.rpc('args', 'rows', { state: 'que', filter: [] })).toEqual(fail(`'filter' must be an object, got []`));
    expect(await t.rpc('args', 'rows', { state: 'que', sort: 'size' })).toEqual(fail(`'sort' must be one of created, -created, finished, -finished, duration, -duration, got "size"`));
    expect(await t.rpc('args', 'rows', { state: 'que', limit: 0 })).toEqual(fail(`'limit' must be an integer >= 1 and <= 1000, got 0`));
    expect(await t.rpc('args', 'ping', '')).toEqual(['pong']);
  });
});

describe('the queue page view', () => {
  const { t: web0, web } = sharedInstall({ setup: (root) => root.addQueue({ name: 'lists', script: 'done.sh', num_workers: 0 }) });

  it('narrows the rows by the filter in its URL and counts the matches', async () => {
    const a = shortId(await web0().send('lists', { param1: 'alpha', src: 'billing' }));
    const b = shortId(await web0().send('lists', { param1: 'beta' }));
    const html = async (q: string): Promise<string> => {
      const res = await web().get(`/q/lists?${q}`);
      expect(res.status, q).toBe(200);
      return res.text();
    };
    const listed = (page: string): string[] => [...page.matchAll(/<tr data-id="([^"]+)">/g)].map((m) => m[1]!);
    expect(listed(await html('state=que'))).toEqual([a, b]);
    expect(listed(await html('state=que&param1=alp'))).toEqual([a]);
    expect(listed(await html('state=que&src=bill&sort=-created&size=100'))).toEqual([a]);
    const narrowed = await html('state=que&text=beta');
    expect(listed(narrowed)).toEqual([b]);
    expect(narrowed).toContain('<span class="matching-count">1</span> matching of 2');
    expect(narrowed).toContain(`<input type="checkbox" name="ids" value="${b}" form="bulk-form"`);
    expect(listed(await html('state=que&from=2000-01-01T00:00&to=2000-01-02T00:00'))).toEqual([]);
  });

  it('answers a bad field with a 400 that names it', async () => {
    for (const [q, field] of [
      ['state=nope', 'state'],
      ['sort=size', 'sort'],
      ['size=7', 'size'],
      ['page=0', 'page'],
      ['from=yesterday', 'from'],
      ['to=2026-02-30T10:00', 'to'],
      ['param1[]=a', 'param1'],
      ['text=a&text=b', 'text'],
    ] as const) {
      const res = await web().get(`/q/lists?${q}`);
      expect(res.status, q).toBe(400);
      expect(await res.text(), q).toContain(`'${field}' must be`);
    }
  });
});
