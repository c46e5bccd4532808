/**
 * The queue's `bulk` command (the dashboard's bulk actions) over a real queue process's
 * socket: retry, clone, delete and move (to a second queue process, through its `adopt`),
 * a message that moved on meanwhile is skipped and counted, attachments follow, and bad
 * input is refused naming the field; and through the web behind Basic auth, the log line
 * naming the user.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestRoot, useTestRoot, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

type Result = { done: number; skipped: number; failed: Array<{ id: string; error: string }> };

async function bulk(queue: string, arg: Record<string, unknown>): Promise<Result> {
  const reply = (await t.rpc(queue, 'bulk', arg)) as [string, Result];
  expect(reply[0], JSON.stringify(reply)).toBe('ok');
  return reply[1];
}

/** A message made in prep with attachment `a.txt`, committed; its short id. */
async function sendWithAttachment(queue: string, fields: Record<string, unknown>): Promise<string> {
  const file = path.join(t.root, 'tmp', `a-${Math.random()}.txt`);
  fs.writeFileSync(file, 'attached text');
  const made = (await t.rpc(queue, 'prep_message', { dest: queue, ...fields })) as [string, string];
  const id = made[1].slice(made[1].lastIndexOf('/') + 1);
  expect(await t.rpc(queue, 'attach_message', { msg_id: id, pathname: file, name: 'a.txt' })).toMatchObject(['ok', expect.stringMatching(/-Attached successfully$/)]);
  expect(await t.rpc(queue, 'commit_message', { msg_id: id })).toEqual(['ok', 'msg commited']);
  return id;
}

/** `n` messages of `queue` (script err.sh) in err, then the queue paused so nothing runs; their ids. */
async function errMessages(queue: string, n: number, withAttachment = false): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(withAttachment ? await sendWithAttachment(queue, { param1: `p${i}` }) : await t.send(queue, { param1: `p${i}` }));
  for (const id of ids) await t.waitState(queue, id, 'err');
  fs.writeFileSync(path.join(t.root, `config/${queue}.pause`), '');
  return ids;
}

const attachment = (queue: string, state: string, id: string): string => fs.readFileSync(path.join(t.queueDir(queue), state, id, 'attach', 'a.txt'), 'utf8');

describe('bulk command', () => {
  it('retries err messages back to que with their ids and attachments, and skips one that moved on', async () => {
    t.addQueue({ name: 'q', script: 'err.sh' });
    await t.start('q');
    const ids = await errMessages('q', 3, true);
    // One leaves err before the bulk reaches it.
    expect(await t.rpc('q', 'delete_message', { msg_id: ids[2] })).toEqual(['ok', 'msg deleted']);
    expect(await bulk('q', { op: 'retry', state: 'err', ids })).toEqual({ done: 2, skipped: 1, failed: [] });
    for (const id of ids.slice(0, 2)) {
      expect(await t.state('q', id)).toBe('que');
      expect(await t.statusOf('q', id)).toBe('que - retried');
      expect(await t.message('q', id)).toMatchObject({ msg_id: id, count: 0 });
      expect(attachment('q', 'que', id)).toBe('attached text');
    }
    expect(await t.rpc('q', 'num_messages', {})).toMatchObject({ que: 2, err: 0 });
    // Un-paused, they run again (and fail again: the script is err.sh).
    fs.rmSync(path.join(t.root, 'config/q.pause'));
    await t.rpc('q', 'ping', '');
    for (const id of ids.slice(0, 2)) await t.waitState('q', id, 'err');
  });

  it('clones err messages into que, the err ones left as they are', async () => {
    t.addQueue({ name: 'q', script: 'err.sh' });
    await t.start('q');
    const ids = await errMessages('q', 2, true);
    expect(await bulk('q', { op: 'clone', state: 'err', ids })).toEqual({ done: 2, skipped: 0, failed: [] });
    expect(await t.rpc('q', 'num_messages', {})).toMatchObject({ que: 2, err: 2 });
    const que = (await t.rpc('q', 'messages', { state: 'que' })) as Array<{ msg_id: string }>;
    for (const { msg_id } of que) {
      const view = await t.message('q', msg_id);
      expect(ids).toContain(view['cloned_from']);
      expect(attachment('q', 'que', msg_id)).toBe('attached text');
    }
  });

  it('deletes messages in que, skipping ids it does not find there', async () => {
    t.addQueue({ name: 'q', script: 'done.sh' });
    fs.writeFileSync(path.join(t.root, 'config/q.pause'), '');
    await t.start('q');
    const ids = [await t.send('q', {}), await t.send('q', {}), await t.send('q', {})];
    expect(await bulk('q', { op: 'delete', state: 'que', ids: [...ids, '20200101.0000.00.000.1'] })).toEqual({ done: 3, skipped: 1, failed: [] });
    expect(await t.rpc('q', 'num_messages', {})).toMatchObject({ que: 0 });
    for (const id of ids) expect(fs.existsSync(path.join(t.queueDir('q'), 'que', id))).toBe(false);
  });

  it('moves messages to another queue: gone here, new there with their fields and attachments', async () => {
    t.addQueue({ name: 'q', script: 'err.sh' });
    t.addQueue({ name: 'other', script: 'done.sh' });
    fs.writeFileSync(path.join(t.root, 'config/other.pause'), '');
    await Promise.all([t.start('q'), t.start('other')]);
    const ids = await errMessages('q', 2, true);
    expect(await bulk('q', { op: 'move', state: 'err', ids, dest: 'other' })).toEqual({ done: 2, skipped: 0, failed: [] });
    expect(await t.rpc('q', 'num_messages', {})).toMatchObject({ err: 0, que: 0 });
    await waitFor(async () => ((await t.rpc('other', 'num_messages', {})) as { que: number }).que === 2);
    const moved = (await t.rpc('other', 'messages', { state: 'que' })) as Array<{ msg_id: string }>;
    const views = await Promise.all(moved.map(({ msg_id }) => t.message('other', msg_id)));
    expect(views.map((v) => v['param1']).sort()).toEqual(['p0', 'p1']);
    for (const view of views) {
      expect(view['dest']).toBe('other');
      expect(String(view['moved_from'])).toMatch(/\/q\/q\/\d{8}\./);
      expect(attachment('other', 'que', String(view['msg_id']))).toBe('attached text');
    }
  });

  it('moves waiting messages and keeps them when the other queue refuses', async () => {
    t.addQueue({ name: 'q', script: 'done.sh' });
    fs.writeFileSync(path.join(t.root, 'config/q.pause'), '');
    await t.start('q');
    const ids = [await t.send('q', {}), await t.send('q', {})];
    // No queue process answers for `gone`: nothing moves, and each is reported failed.
    const r = await bulk('q', { op: 'move', state: 'que', ids, dest: 'gone' });
    expect(r.done).toBe(0);
    expect(r.failed.map((f) => f.id).sort()).toEqual([...ids].sort());
    expect(await t.rpc('q', 'num_messages', {})).toMatchObject({ que: 2 });
    fs.rmSync(path.join(t.root, 'config/q.pause'));
    await t.rpc('q', 'ping', '');
    for (const id of ids) await t.waitState('q', id, 'done');
  });

  it('refuses bad input naming the field', async () => {
    t.addQueue({ name: 'q', script: 'done.sh' });
    await t.start('q');
    const refusal = async (arg: Record<string, unknown>): Promise<string> => {
      const reply = (await t.rpc('q', 'bulk', arg)) as [string, string, string];
      expect(reply[0]).toBe('fail');
      expect(reply[2]).toBe('RQ_BAD_REQUEST');
      return reply[1];
    };
    expect(await refusal({ op: 'smash', state: 'err', ids: ['x'] })).toMatch(/'op' must be/);
    expect(await refusal({ op: 'retry', state: 'que', ids: ['x'] })).toMatch(/'op' retry applies to messages in err, not que/);
    expect(await refusal({ op: 'delete', state: 'err', ids: [] })).toMatch(/'ids' must be 1 to 500/);
    expect(await refusal({ op: 'delete', state: 'err', ids: ['../x'] })).toMatch(/'ids' must be/);
    expect(await refusal({ op: 'move', state: 'err', ids: ['x'], dest: 'q' })).toMatch(/'dest' must name another queue/);
    expect(await refusal({ op: 'move', state: 'err', ids: ['x'] })).toMatch(/'dest' must name another queue/);
    expect(await t.rpc('q', 'ping', '')).toEqual(['pong']);
  });
});

describe('a bulk action behind Basic auth', () => {
  const shared = sharedInstall({
    config: { basic_auth: { realm: 'ops', users: { ann: 's3cret' } } },
    setup: (r) => {
      r.addQueue({ name: 'authq', script: 'done.sh' });
      fs.writeFileSync(path.join(r.root, 'config/authq.pause'), '');
    },
  });

  it('names the Basic auth user in the web log, and ends with the counts', async () => {
    const auth = { Authorization: `Basic ${Buffer.from('ann:s3cret').toString('base64')}` };
    const ids = [await shared.t().send('authq', {}), await shared.t().send('authq', {})];
    const body = new URLSearchParams([['op', 'delete'], ['state', 'que'], ['confirm', '1'], ...ids.map((id): [string, string] => ['ids', id])]).toString();
    const res = await shared.web().request('/q/authq/bulk', { method: 'POST', headers: { ...auth, 'Content-Type': 'application/x-www-form-urlencoded' }, body });
    expect(res.status).toBe(303);
    const progress = new URL(res.headers.get('location')!).pathname;
    let job: { finished: boolean; done: number; user: string } = { finished: false, done: 0, user: '' };
    await waitFor(async () => {
      job = (await (await shared.web().get(`${progress}.json`, auth)).json()) as typeof job;
      return job.finished;
    });
    expect(job).toMatchObject({ done: 2, user: 'ann' });
    const log = fs.readFileSync(path.join(shared.t().root, 'log/rq.log'), 'utf8');
    expect(log).toMatch(/"user":"ann","queue":"authq","op":"delete","state":"que","messages":2,"msg":"bulk action started"/);
    expect(log).toMatch(/"user":"ann","queue":"authq","op":"delete","messages":2,"done":2,"skipped":0,"failed":0,"ms":\d+,"msg":"bulk action ended"/);
  });
});
