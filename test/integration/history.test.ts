/**
 * A queue's history (queue/history.ts, the file's layout in domain/history-layout.ts):
 * done and err, the wait and run times, kept by minute in `history.bin`, which survives a
 * kill -9 of the queue process and a restart; a hosted pull queue put away answers its
 * `history` from the file without loading; the web's History routes refuse a bad range
 * with a 400 and sum the queues for the whole install; `/metrics`' done and err totals
 * go on across a restart.
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

/** Written as soon as there is news (the default waits up to a minute). */
const FLUSH_NOW = { RQ_HISTORY_FLUSH_MS: '0' };

interface Series {
  range: string;
  step: number;
  points: Array<{ t: number; done: number; err: number }>;
  summary: { done: number; err: number; waiting: number; wait_p50: number | null; run_p50: number | null; run_p95: number | null };
}

/** The totals at the head of a history file, read by its documented layout: `RQHIST1\n`, then float64 done, err. */
function fileTotals(queue: string): { done: number; err: number } | undefined {
  let b: Buffer;
  try {
    b = fs.readFileSync(path.join(t.queueDir(queue), 'history.bin'));
  } catch {
    return undefined;
  }
  // A file just made is all zeros until its first header is written (history.ts): not yet there.
  if (b.subarray(0, 8).every((byte) => byte === 0)) return undefined;
  expect(b.toString('latin1', 0, 8)).toBe('RQHIST1\n');
  return { done: b.readDoubleLE(8), err: b.readDoubleLE(16) };
}

async function history(queue: string, range?: string): Promise<Series> {
  const reply = (await t.rpc(queue, 'history', range === undefined ? {} : { range })) as Series;
  expect(Array.isArray(reply), JSON.stringify(reply)).toBe(false);
  return reply;
}

describe('the history of a queue', () => {
  it('keeps done, err and the run and wait times by minute, across a kill -9 of the queue process and its restart', async () => {
    t.addQueue({ name: 'ok', script: 'done.sh' });
    t.addQueue({ name: 'bad', script: 'err.sh' });
    const web = await startWeb(t, {}, FLUSH_NOW);
    const done = await Promise.all([1, 2, 3].map((i) => t.send('ok', { param1: String(i) })));
    const errs = await Promise.all([1, 2].map(() => t.send('bad', {})));
    for (const id of done) await t.waitState('ok', id, 'done');
    for (const id of errs) await t.waitState('bad', id, 'err');

    const before = await history('ok');
    expect(before).toMatchObject({ range: 'hour', step: 60 });
    expect(before.points).toHaveLength(60);
    expect(before.summary).toMatchObject({ done: 3, err: 0 });
    expect(before.summary.run_p50).toBeGreaterThan(0);
    expect(before.summary.wait_p50).not.toBeNull();
    expect(before.points.at(-1)!.done + before.points.at(-2)!.done).toBe(3);
    expect((await history('bad')).summary).toMatchObject({ done: 0, err: 2 });

    await waitFor(() => fileTotals('ok')?.done === 3, 10_000, 'the history file to hold the 3 runs');
    expect(fs.statSync(path.join(t.queueDir('ok'), 'history.bin')).size).toBe(77_888);
    await t.killQueueUnderMgr('ok');
    // The new process counts from the file: its `stats` since it started say 0.
    expect(await t.rpc('ok', 'stats', {})).toMatchObject({ done: 0, totals: { done: 3, err: 0, run_seconds: { count: 3 } } });
    expect((await history('ok')).summary).toMatchObject({ done: 3 });
    for (const range of ['day', 'week']) expect((await history('ok', range)).summary.done).toBe(3);
    await t.waitState('ok', await t.send('ok', {}), 'done');
    expect((await history('ok')).summary).toMatchObject({ done: 4 });

    expect(((await (await web.get('/q/ok/history.json')).json()) as Series).summary).toMatchObject({ done: 4 });
    const metrics = await (await web.get('/metrics')).text();
    expect(metrics).toMatch(/^rq_messages_done_total\{queue="ok"\} 4$/m);
    expect(metrics).toMatch(/^rq_messages_err_total\{queue="bad"\} 2$/m);
    expect(metrics).toMatch(/^rq_run_duration_seconds_count\{queue="ok"\} 4$/m);
    expect(metrics).toMatch(/^rq_wait_duration_seconds_count\{queue="ok"\} 4$/m);
  });

  it('answers for a hosted pull queue put away, without loading it: its leases as runs, its acks as done', async () => {
    addPullQueue(t, 'pq');
    await startWeb(t, {}, { RQ_UNLOAD_MS: '200' });
    const host = t.pidIn('queues/pq/queue.pid')!;
    for (const body of ['a', 'b']) expect(((await t.rpc('pq', 'publish', { payload: Buffer.from(body).toString('base64') })) as unknown[])[0]).toBe('ok');
    const leased = (await t.rpc('pq', 'lease', { owner: 'w', count: 2, ttr_ms: 60_000 })) as [string, Array<{ id: string }>];
    expect(leased[1]).toHaveLength(2);
    expect(((await t.rpc('pq', 'ack', { ref: leased[1][0]!.id })) as unknown[])[0]).toBe('ok');
    expect(((await t.rpc('pq', 'finish', { ref: leased[1][1]!.id, success: false })) as unknown[])[0]).toBe('ok');
    await waitFor(() => openFilesOf(t, host, 'pq').length === 0, 10_000, 'the idle queue to be put away');
    // Written as it was put away (the default flush would wait for the minute's end).
    expect(fileTotals('pq')).toEqual({ done: 1, err: 1 });
    const s = await history('pq');
    expect(s.summary).toMatchObject({ done: 1, err: 1 });
    expect(s.summary.run_p95).not.toBeNull();
    expect(openFilesOf(t, host, 'pq')).toEqual([]);
  });

  it('refuses a bad range: the command with RQ_BAD_REQUEST, the web with a 400 and the reason', async () => {
    t.addQueue({ name: 'ok', script: 'done.sh' });
    const web = await startWeb(t, {}, FLUSH_NOW);
    expect(await t.rpc('ok', 'history', { range: 'year' })).toEqual(['fail', `'range' must be "hour" or "day" or "week", got "year"`, 'RQ_BAD_REQUEST']);
    for (const url of ['/q/ok/history.json?range=year', '/history.json?range=year']) {
      const res = await web.get(url);
      expect(res.status, url).toBe(400);
      expect(await res.json()).toEqual(['fail', `'range' must be one of hour, day, week, got "year"`]);
    }
    const page = await web.get('/q/ok/history?range=', { Accept: 'text/html' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('&#39;range&#39; must be one of hour, day, week');
    expect((await web.get('/q/nosuch/history.json')).status).toBe(404);
  });

  it('sums the queues for the whole install from their files', async () => {
    t.addQueue({ name: 'ok', script: 'done.sh' });
    t.addQueue({ name: 'bad', script: 'err.sh' });
    const web = await startWeb(t, {}, FLUSH_NOW);
    await t.waitState('ok', await t.send('ok', {}), 'done');
    await t.waitState('ok', await t.send('ok', {}), 'done');
    await t.waitState('bad', await t.send('bad', {}), 'err');
    await waitFor(() => fileTotals('ok')?.done === 2 && fileTotals('bad')?.err === 1, 10_000, 'the history files');
    const all = (await (await web.get('/history.json?range=day')).json()) as Series & { queues: number };
    expect(all).toMatchObject({ range: 'day', step: 600, queues: 2, summary: { done: 2, err: 1 } });
    expect(all.points).toHaveLength(144);
  });
});
