// The pull model in a real queue process (src/queue/pull.ts), over its socket: publish,
// lease, ack, nack, touch, set, peek, TTR ends, tries, the dead letter, TTLs, waiters,
// and recovery of leases across kill -9.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOLD_COMMIT_ENV, recorded, useTestRoot, waitFor, type TestRoot } from '../helpers/install.js';

const t = useTestRoot();

/** A pull queue (no script) running in its own process. */
async function pullQueue(root: TestRoot, name = 'pq', env: NodeJS.ProcessEnv = {}): Promise<string> {
  root.addQueue({ name, script: '/nonexistent' });
  fs.writeFileSync(path.join(root.queueDir(name), 'config.json'), JSON.stringify({ name, script: '', num_workers: 0 }));
  await root.start(name, env);
  return name;
}

/** The fields of a leased job that these tests read. */
interface Job {
  id: string;
  ext_id: string;
  payload: string;
}

/** The reply's value, as loose as its JSON (each test's expect checks it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(root: TestRoot, queue: string, command: string, arg: Record<string, unknown>): Promise<any> {
  const reply = (await root.rpc(queue, command, arg)) as unknown[];
  if (reply?.[0] !== 'ok') throw new Error(`${command} ${JSON.stringify(arg)} → ${JSON.stringify(reply)}`);
  return reply[1];
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('publish and lease', () => {
  it('leases in FIFO order, each message once, with its payload and lease', async () => {
    const q = await pullQueue(t());
    for (const n of [1, 2, 3]) await ok(t(), q, 'publish', { src: 'test', payload: b64(`job ${n}`) });
    const jobs = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000, count: 2 });
    expect(jobs.map((j: Job) => Buffer.from(j.payload, 'base64').toString())).toEqual(['job 1', 'job 2']);
    expect(jobs[0]).toMatchObject({ state: 'run', count: 1, rev: 2, lease: { owner: 'w' } });
    expect(await t().state(q, jobs[0].id)).toBe('run');
    expect(fs.readFileSync(path.join(t().queueDir(q), 'run', jobs[0].id, 'attach', 'payload'), 'utf8')).toBe('job 1');
    const rest = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000, count: 5 });
    expect(rest).toHaveLength(1);
    expect(await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 })).toEqual([]);
    expect(await ok(t(), q, 'pull_stats', {})).toMatchObject({ ready: 0, delayed: 0, leased: 3, dead: 0 });
  });

  it('orders by priority, then rank, then sort key', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', { ext_id: 'b', rank: 0, sort_key: 'b' });
    await ok(t(), q, 'publish', { ext_id: 'a', rank: 0, sort_key: 'a' });
    await ok(t(), q, 'publish', { ext_id: 'hi', priority: 5 });
    const jobs = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: null, count: 3 });
    expect(jobs.map((j: Job) => j.ext_id)).toEqual(['hi', 'a', 'b']);
  });

  it('refuses a duplicate external id while the first is not done, and takes it again after the ack', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', { ext_id: 'x' });
    expect(await t().rpc(q, 'publish', { ext_id: 'x' })).toEqual(['fail', 'a message with id x is already in queue pq', 'RQ_DUPLICATE']);
    await ok(t(), q, 'ack', { ref: 'x' });
    await ok(t(), q, 'publish', { ext_id: 'x' });
  });

  it('refuses bad arguments with a clear error and a code', async () => {
    const q = await pullQueue(t());
    expect(await t().rpc(q, 'publish', { tries: 0 })).toEqual(['fail', "'tries' must be an integer >= 1, got 0", 'RQ_BAD_REQUEST']);
    expect(await t().rpc(q, 'publish', { payload: '%%%' })).toEqual(['fail', "'payload' must be base64", 'RQ_BAD_REQUEST']);
    expect(await t().rpc(q, 'lease', { ttr_ms: 1 })).toEqual(['fail', "lacking 'owner' field", 'RQ_BAD_REQUEST']);
    expect(await t().rpc(q, 'lease', { owner: 'w', count: 1001 })).toEqual(['fail', "'count' must be at most 1000", 'RQ_BAD_REQUEST']);
    expect(await t().rpc(q, 'ack', { ref: 'nope' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
  });

  it('refuses to publish to or lease from a queue that runs a script', async () => {
    t().addQueue({ name: 'scripted', script: 'done.sh', num_workers: 0 });
    await t().start('scripted');
    const id = await t().send('scripted', {});
    const commands = [['lease', { owner: 'w' }], ['publish', {}], ['set', { ext_id: 'x' }], ['ack', { ref: id }], ['purge_ready', {}]] as const;
    for (const [command, arg] of commands) {
      const reply = (await t().rpc('scripted', command, arg)) as unknown[];
      expect(reply[0]).toBe('fail');
      expect(reply[2]).toBe('RQ_NOT_PULL');
    }
    expect(await t().state('scripted', id)).toBe('que');
  });
});

describe('one message, one command at a time', () => {
  it('a delete sent while a lease is being committed waits for the lease, then deletes the leased message', async () => {
    // While `hold-commit` exists, the queue process's journal syncs wait (HOLD_COMMIT_ENV).
    const hold = path.join(t().root, 'hold-commit');
    const q = await pullQueue(t(), 'pq', HOLD_COMMIT_ENV);
    const { id } = await ok(t(), q, 'publish', { payload: b64('job') });
    fs.writeFileSync(hold, '');
    const leasing = ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    await waitFor(() => recorded(t(), q, id, 'run'), 5_000, 'the lease\'s record');
    let answered = false;
    const deleting = t().rpc(q, 'delete_message', { msg_id: id }).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    fs.rmSync(hold);
    expect((await leasing).map((j: Job) => j.id)).toEqual([id]);
    expect(await deleting).toEqual(['ok', 'msg deleted']);
    expect(await t().rpc(q, 'get_message_state', { msg_id: id })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await ok(t(), q, 'pull_stats', {})).toMatchObject({ ready: 0, leased: 0 });
  });

  it('a peek sent while an ack is being committed waits for it, then shows the message done', async () => {
    const hold = path.join(t().root, 'hold-commit');
    const q = await pullQueue(t(), 'pq', HOLD_COMMIT_ENV);
    const { id } = await ok(t(), q, 'publish', { payload: b64('job') });
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    fs.writeFileSync(hold, '');
    const acking = ok(t(), q, 'ack', { ref: id });
    await waitFor(() => recorded(t(), q, id, 'done'), 5_000, 'the ack\'s record');
    let answered = false;
    const peeking = ok(t(), q, 'peek', { ref: id, all: true }).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    fs.rmSync(hold);
    await acking;
    expect(await peeking).toMatchObject({ id, state: 'done' });
  });

  it('a waiting lease gets a message made ready by a command holding it, once the command lets go', async () => {
    const q = await pullQueue(t());
    const { id } = await ok(t(), q, 'publish', { ext_id: 'item', payload: b64('1') });
    expect((await ok(t(), q, 'lease', { owner: 'a', ttr_ms: 60_000 })).map((j: Job) => j.id)).toEqual([id]);
    const waiting = t().rpc(q, 'lease', { owner: 'b', ttr_ms: 60_000, wait_ms: 4_000 });
    await new Promise((r) => setTimeout(r, 100));
    // set moves the leased message back to que under its lock: the wake-up it causes
    // finds the message still held, so only the lock's release can hand it to the waiter.
    await ok(t(), q, 'set', { ext_id: 'item', payload: b64('2') });
    const [, jobs] = (await waiting) as [string, Job[]];
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ id, payload: b64('2'), lease: { owner: 'b' } });
  });
});

describe('lease ends', () => {
  it('a TTR end puts the message back; with no tries left it goes to the dead letter, and respawn brings it back', async () => {
    const q = await pullQueue(t());
    const { id } = await ok(t(), q, 'publish', { tries: 2, ext_id: 'j', requeue: 'tail' });
    const first = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 50 });
    expect(first[0].tries).toBe(1);
    await waitFor(async () => (await t().state(q, id)) === 'que', 5000, 'the TTR end');
    const second = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 50 });
    expect(second[0]).toMatchObject({ id, tries: 0, count: 2 });
    await waitFor(async () => (await t().state(q, id)) === 'err', 5000, 'the dead letter');
    const dead = await ok(t(), q, 'dead_letter', {});
    expect(dead).toMatchObject({ size: 1, deleted: 0, head: { id, dead: true, ext_id: 'j' } });
    expect(await ok(t(), q, 'respawn', { limit: 5, ttl_ms: 0 })).toBe(1);
    const third = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(third[0]).toMatchObject({ id, tries: 0, dead: false });
  });

  it('RQ’s max_count rule applies without tries, and max_count 0 never gives up', async () => {
    const q = await pullQueue(t());
    const limited = (await ok(t(), q, 'publish', { max_count: 1 })).id;
    const forever = (await ok(t(), q, 'publish', { max_count: 0 })).id;
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 0, count: 2 });
    await waitFor(async () => (await t().state(q, limited)) === 'err', 5000, 'the limited one to die');
    await waitFor(async () => (await t().state(q, forever)) === 'que', 5000, 'the other to come back');
  });

  it('nack with refund gives the lease back as if it never was', async () => {
    const q = await pullQueue(t());
    const { id } = await ok(t(), q, 'publish', { tries: 1 });
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(await ok(t(), q, 'nack', { ref: id, refund: true })).toEqual({ id, state: 'que' });
    const [job] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(job).toMatchObject({ id, tries: 0, count: 1 });
  });

  it('touch moves the end of a lease; a stale rev is refused', async () => {
    const q = await pullQueue(t());
    const { id } = await ok(t(), q, 'publish', {});
    const [job] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 100 });
    const { until } = await ok(t(), q, 'touch', { ref: id, ttr_ms: 60_000, rev: job.rev });
    expect(until).toBeGreaterThan(Date.now() + 50_000);
    expect((await t().rpc(q, 'touch', { ref: id, ttr_ms: 1, rev: job.rev + 1 }))).toEqual(['fail', `msg ${id} is at rev ${job.rev}, not ${job.rev + 1}`, 'RQ_STALE']);
    expect(((await ok(t(), q, 'peek', { ref: id })) as { lease: { until: number } }).lease.until).toBe(until);
  });

  it('ack with a rev: stale after a set, and the message is kept in done without its external id', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', { ext_id: 'item', payload: b64('1') });
    const [job] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(await ok(t(), q, 'set', { ext_id: 'item', payload: b64('2') })).toEqual({ id: job.id, created: false });
    expect(((await t().rpc(q, 'ack', { ref: 'item', rev: job.rev })) as unknown[])[2]).toBe('RQ_STALE');
    const [again] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(Buffer.from(again.payload, 'base64').toString()).toBe('2');
    await ok(t(), q, 'ack', { ref: 'item', rev: again.rev, status: 'finished by test' });
    expect(await t().statusOf(q, job.id)).toBe('done - finished by test');
    expect(await ok(t(), q, 'peek', { ref: 'item' })).toBeNull();
  });
});

describe('TTL, delays and purge', () => {
  it('a delayed message is ready only when due; a TTL removes it unseen', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', { ttl_ms: 100 });
    await waitFor(async () => (await ok(t(), q, 'pull_stats', {})).ready === 0, 5000, 'the TTL');
    expect(fs.readdirSync(path.join(t().queueDir(q), 'que'))).toEqual([]);
    const delayed = (await ok(t(), q, 'publish', { delay_ms: 300 })).id;
    expect(await ok(t(), q, 'pull_stats', {})).toMatchObject({ ready: 0, delayed: 1 });
    expect(await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 })).toEqual([]);
    const jobs = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000, count: 2, wait_ms: 5000 });
    expect(jobs.map((j: Job) => j.id)).toEqual([delayed]);
    expect(jobs[0].due_ms).toBeLessThanOrEqual(Date.now());
  });

  it('purge_ready removes the ready messages and keeps the delayed and leased ones', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', {});
    await ok(t(), q, 'publish', {});
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    await ok(t(), q, 'publish', { delay_ms: 60_000 });
    expect(await ok(t(), q, 'purge_ready', {})).toBe(1);
    expect(await ok(t(), q, 'pull_stats', {})).toMatchObject({ ready: 0, delayed: 1, leased: 1, dead: 0 });
  });
});

describe('waiting leases', () => {
  it('wake in the order they started waiting, on a publish, with no polling', async () => {
    const q = await pullQueue(t());
    const first = t().rpc(q, 'lease', { owner: 'a', ttr_ms: 60_000, wait_ms: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    const second = t().rpc(q, 'lease', { owner: 'b', ttr_ms: 60_000, wait_ms: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    const one = (await ok(t(), q, 'publish', { payload: b64('1') })).id;
    expect(((await first) as [string, Job[]])[1][0]?.id).toBe(one);
    const two = (await ok(t(), q, 'publish', { payload: b64('2') })).id;
    expect(((await second) as [string, Job[]])[1][0]?.id).toBe(two);
  });

  it('a cancelled wait answers empty and leases nothing', async () => {
    const q = await pullQueue(t());
    const waiting = t().rpc(q, 'lease', { owner: 'a', ttr_ms: 60_000, wait_ms: 10_000, waiter: 'tok' });
    await waitFor(async () => (await ok(t(), q, 'cancel_wait', { waiter: 'tok' })) === 1, 5000, 'the wait to be cancelled');
    expect(await waiting).toEqual(['ok', []]);
    await ok(t(), q, 'publish', {});
    expect(await ok(t(), q, 'pull_stats', {})).toMatchObject({ ready: 1, leased: 0 });
  });

  it('a wait whose cancel came first answers empty at once', async () => {
    const q = await pullQueue(t());
    expect(await ok(t(), q, 'cancel_wait', { waiter: 'early' })).toBe(0);
    expect(await ok(t(), q, 'lease', { owner: 'a', ttr_ms: 1000, wait_ms: 60_000, waiter: 'early' })).toEqual([]);
  });

  it('a wait times out with nothing', async () => {
    const q = await pullQueue(t());
    expect(await ok(t(), q, 'lease', { owner: 'a', ttr_ms: 1000, wait_ms: 100 })).toEqual([]);
  });

  it('concurrent leases of one message: exactly one wins', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', {});
    const replies = await Promise.all(Array.from({ length: 20 }, () => ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 })));
    expect(replies.filter((r: unknown[]) => r.length === 1)).toHaveLength(1);
  });
});

describe('recovery', () => {
  it('keeps an unexpired lease across kill -9, ends an expired one, and keeps acks', async () => {
    const q = await pullQueue(t());
    const keep = (await ok(t(), q, 'publish', { ext_id: 'keep' })).id;
    const lapse = (await ok(t(), q, 'publish', { ext_id: 'lapse', requeue: 'tail' })).id;
    const acked = (await ok(t(), q, 'publish', { ext_id: 'acked' })).id;
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 300 });
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    await ok(t(), q, 'ack', { ref: 'acked' });
    await t().kill9(q);
    await new Promise((r) => setTimeout(r, 400));
    await t().start(q);
    expect(await t().state(q, keep)).toBe('run');
    expect(await t().state(q, acked)).toBe('done');
    await waitFor(async () => (await t().state(q, lapse)) === 'que', 5000, 'the lapsed lease to end');
    const [again] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(again.id).toBe(lapse);
    expect(await ok(t(), q, 'peek', { ref: 'keep' })).toMatchObject({ id: keep, state: 'run', lease: { owner: 'w' } });
  });
});

describe('results, removal and server-wide external ids (what Workq stands on)', () => {
  const job = { ext_id: 'job-1', ext_scope: 'server', ttl_final: true };

  it('a server-wide id is unique across queue processes, even when publishes race; remove frees it', async () => {
    const queues = [await pullQueue(t(), 'qa'), await pullQueue(t(), 'qb')];
    for (let round = 0; round < 5; round++) {
      const ext = `race-${round}`;
      const replies = await Promise.all(
        Array.from({ length: 8 }, (_, i) => t().rpc(queues[i % 2]!, 'publish', { ...job, ext_id: ext })),
      );
      const won = replies.filter((r) => (r as unknown[])[0] === 'ok');
      expect(won, JSON.stringify(replies)).toHaveLength(1);
      for (const r of replies) if (r !== won[0]) expect(r).toEqual(['fail', `a message with id ${ext} is already in this server`, 'RQ_DUPLICATE']);
      const held = await Promise.all(queues.map(async (q) => (await ok(t(), q, 'peek', { ref: ext })) !== null));
      expect(held.filter(Boolean)).toHaveLength(1);
      const holder = queues[held.indexOf(true)]!;
      await ok(t(), holder, 'remove', { ref: ext });
      await ok(t(), queues.find((q) => q !== holder)!, 'publish', { ...job, ext_id: ext });
    }
  });

  it('a finished message keeps its server-wide id; one an operator deleted by hand frees it', async () => {
    const q = await pullQueue(t());
    const { id } = await ok(t(), q, 'publish', job);
    await ok(t(), q, 'finish', { ref: 'job-1', success: true, result: b64('r') });
    expect(((await t().rpc(q, 'publish', job)) as unknown[])[2]).toBe('RQ_DUPLICATE');
    const dir = (await ok(t(), q, 'get_message', { msg_id: id })).path as string;
    fs.rmSync(path.join(t().root, dir), { recursive: true });
    await ok(t(), q, 'publish', job);
  });

  it('finish stores the result for every waiter; a second finish is refused; a failure with retries left goes back in its place', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', { ...job, max_fails: 2 });
    await ok(t(), q, 'publish', { ...job, ext_id: 'job-2' });
    const [leased] = await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 60_000 });
    expect(leased.ext_id).toBe('job-1');
    const waits = [1, 2, 3].map(() => ok(t(), q, 'result_wait', { ref: 'job-1', wait_ms: 10_000 }));
    expect(await ok(t(), q, 'finish', { ref: 'job-1', success: false, result: b64('try again') })).toMatchObject({ state: 'que' });
    expect(await ok(t(), q, 'peek', { ref: 'job-1' })).toMatchObject({ state: 'que', fails: 1, count: 1, lease: null });
    // Back in its place: ahead of job-2, which came later.
    expect((await ok(t(), q, 'list', { which: 'ready' })).map((v: { ext_id: string }) => v.ext_id)).toEqual(['job-1', 'job-2']);
    await ok(t(), q, 'finish', { ref: 'job-1', success: false, result: b64('final') });
    const outcome = { state: 'err', success: false, result: b64('final') };
    expect(await Promise.all(waits)).toEqual([outcome, outcome, outcome]);
    expect(await t().rpc(q, 'finish', { ref: 'job-1', success: true })).toEqual(['fail', expect.stringContaining('already finished'), 'RQ_NOT_IN_STATE']);
    expect(await ok(t(), q, 'result_wait', { ref: 'job-1', wait_ms: 0 })).toEqual(outcome);
    expect(await ok(t(), q, 'result_wait', { ref: 'job-2', wait_ms: 50 })).toBeNull();
  });

  it('result_wait with lease_grace waits out a lease that is running when its time is up', async () => {
    const q = await pullQueue(t());
    await ok(t(), q, 'publish', job);
    await ok(t(), q, 'lease', { owner: 'w', ttr_ms: 1_000 });
    const waited = ok(t(), q, 'result_wait', { ref: 'job-1', wait_ms: 100, lease_grace: true });
    await new Promise((r) => setTimeout(r, 400));
    await ok(t(), q, 'finish', { ref: 'job-1', success: true, result: b64('late') });
    expect(await waited).toEqual({ state: 'done', success: true, result: b64('late') });
  });

  it('a final TTL removes the message in done too; only unfinished ones count as evicted', async () => {
    const q = await pullQueue(t());
    const soon = Date.now() + 400;
    await ok(t(), q, 'publish', { ...job, expires_at: soon });
    await ok(t(), q, 'publish', { ...job, ext_id: 'job-2', expires_at: soon });
    await ok(t(), q, 'finish', { ref: 'job-1', success: true });
    await waitFor(async () => (await ok(t(), q, 'peek', { ref: 'job-1', all: true })) === null && (await ok(t(), q, 'peek', { ref: 'job-2' })) === null, 5000, 'the TTLs');
    await waitFor(async () => (await ok(t(), q, 'pull_stats', {})).evicted === 1, 5000, 'the eviction count');
    expect(await t().rpc(q, 'remove', { ref: 'job-1' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    await ok(t(), q, 'publish', job);
  });

  it('lists delayed messages in the ready order (priority, then rank)', async () => {
    const q = await pullQueue(t());
    const later = Date.now() + 60_000;
    await ok(t(), q, 'publish', { ext_id: 'a', due_at: later + 10, rank: later + 10 });
    await ok(t(), q, 'publish', { ext_id: 'b', due_at: later + 20, rank: later + 20, priority: 5 });
    await ok(t(), q, 'publish', { ext_id: 'c', due_at: later, rank: later });
    expect((await ok(t(), q, 'list', { which: 'delayed' })).map((v: { ext_id: string }) => v.ext_id)).toEqual(['b', 'c', 'a']);
    expect((await ok(t(), q, 'list', { which: 'delayed', offset: 1, limit: 1 })).map((v: { ext_id: string }) => v.ext_id)).toEqual(['c']);
  });
});
