/**
 * Replies while a queue process restarts (issue 19): rq-mgr runs the queues and the web
 * process; a queue process is killed with -9 at a chosen moment of a create (preloaded
 * test/fixtures/die-at.cjs: before the id is allocated, after it was announced and before
 * the commit, or right after the commit, before the reply), or at random under load. No
 * front door answers `null` or a 500: each reply is a success naming the one message
 * made, or a 503 whose code says whether something may have been made (RQ_UNAVAILABLE:
 * nothing; RQ_OUTCOME_UNKNOWN: maybe, with the id of the message it was making).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, pidAlive, shortId, waitFor, type TestRoot } from '../helpers/install.js';
import { runRq } from '../helpers/cli.js';
import { sharedProtocols } from '../helpers/protocols.js';
import { sharedInstall, type Web } from '../helpers/web.js';
import { WorkqClient } from '../helpers/workq-client.js';

const DIE_AT = { NODE_OPTIONS: `--require ${path.join(REPO, 'test/fixtures/die-at.cjs')}` };
const MOMENTS = ['allocate', 'commit', 'reply'] as const;
type Moment = (typeof MOMENTS)[number];

let tokens = 0;
/** A param1 no other message has. */
const token = (): string => `t${process.pid}-${++tokens}-${Date.now()}`;

/** The ids of the messages of `queue` whose param1 is `param1`, in any state. */
async function idsWith(t: TestRoot, queue: string, param1: string): Promise<string[]> {
  const reply = (await t.rpc(queue, 'search', { query: { param1 }, exact: true })) as [string, { messages: Array<{ msg_id: string }> }];
  expect(reply[0], JSON.stringify(reply)).toBe('ok');
  return reply[1].messages.map((m) => m.msg_id);
}

/**
 * A queue rq-mgr cannot serve: its config.json is not JSON, so each process rq-mgr starts
 * for it (it notices the new directory) exits at once, and no socket ever answers.
 */
function addUnservable(t: TestRoot, name: string): void {
  t.addQueue({ name, num_workers: 0 });
  fs.writeFileSync(path.join(t.queueDir(name), 'config.json'), '{"name": ');
}

/** Arm the fixture: the queue's next create kills its process at `moment`; returns the pid that will die. */
function armDeath(t: TestRoot, queue: string, moment: Moment): number {
  const pid = t.pidIn(`queues/${queue}/queue.pid`)!;
  expect(pidAlive(pid)).toBe(true);
  fs.writeFileSync(path.join(t.root, 'die-at'), moment);
  return pid;
}

/** The queue process `pid` died (the fixture fired) and rq-mgr's new one answers. */
async function restarted(t: TestRoot, queue: string, pid: number): Promise<void> {
  expect(fs.existsSync(path.join(t.root, 'die-at'))).toBe(false);
  await waitFor(() => !pidAlive(pid), 10_000, 'the killed queue process to be gone');
  await waitFor(async () => (await t.rpc(queue, 'ping', '')) !== null, 10_000, 'the new queue process');
}

const postJson = async (web: Web, queue: string, body: Record<string, unknown>): Promise<{ status: number; text: string; headers: Headers }> => {
  const res = await web.postJson(`/q/${queue}/new_message`, body);
  return { status: res.status, text: await res.text(), headers: res.headers };
};

describe('POST /q/<q>/new_message across a kill -9 of the queue process', () => {
  const { t, web } = sharedInstall({
    env: DIE_AT,
    setup: (root) => root.addQueue({ name: 'keep', num_workers: 0 }),
  });

  it.each(MOMENTS)('killed at %s: answers ok with the one message made', async (moment) => {
    const param1 = token();
    const pid = armDeath(t(), 'keep', moment);
    const r = await postJson(web(), 'keep', { dest: 'keep', param1 });
    await restarted(t(), 'keep', pid);
    expect(r.status, r.text).toBe(200);
    const reply = JSON.parse(r.text) as [string, string];
    expect(reply[0], r.text).toBe('ok');
    expect(await idsWith(t(), 'keep', param1)).toEqual([shortId(reply[1])]);
    expect(await t().state('keep', shortId(reply[1]))).toBe('que');
  });

  it('bin/rq sendmesg killed after the commit prints ok with the one message made', async () => {
    const param1 = token();
    const pid = armDeath(t(), 'keep', 'reply');
    const r = await runRq(t().root, ['sendmesg', '--dest', 'keep', '--param1', param1]);
    await restarted(t(), 'keep', pid);
    expect(r, r.stderr).toMatchObject({ code: 0, stderr: '' });
    const id = /^ok (\S+)\n$/.exec(r.stdout)?.[1];
    expect(id, r.stdout).toBeDefined();
    expect(await idsWith(t(), 'keep', param1)).toEqual([shortId(id!)]);
  });

  it('a queue with no process: 503 RQ_UNAVAILABLE with Retry-After, nothing made; the CLI exits 75', async () => {
    addUnservable(t(), 'unrun');
    // Each waits RESTART_WAIT_MS for a process to come: all at once.
    const [r, json, cli] = await Promise.all([
      postJson(web(), 'unrun', { dest: 'unrun', param1: 'x' }),
      web().postForm('/q/unrun/new_message', { mesg: JSON.stringify({ dest: 'unrun' }), x_format: 'json' }),
      runRq(t().root, ['sendmesg', '--dest', 'unrun']),
    ]);
    expect(r.status, r.text).toBe(503);
    expect(r.headers.get('x-rq-error')).toBe('RQ_UNAVAILABLE');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(r.text).toMatch(/^503 - Queue unrun is not answering \(ENOENT\), and nothing was done: try again$/);
    expect(json.status).toBe(503);
    expect(await json.json()).toEqual(['fail', 'Queue unrun is not answering (ENOENT), and nothing was done: try again']);
    expect(cli).toMatchObject({ code: 75, stdout: '' });
    expect(cli.stderr).toMatch(/^Queue unrun on \S+queue\.sock is not answering \(ENOENT\), and nothing was done: try again\n$/);
    expect(fs.readdirSync(path.join(t().queueDir('unrun'), 'que'))).toEqual([]);
  });

  it('under load: every reply is ok with its one message, or a 503 that says whether one may have been made', async () => {
    const seen = { ok: 0, unavailable: 0, unknown: 0 };
    // Three rounds: with the four kills above, under rq-mgr's limit of 10 restarts.
    for (let round = 0; round < 3; round++) {
      const pid = t().pidIn('queues/keep/queue.pid')!;
      const sent = Array.from({ length: 24 }, () => token());
      const replies = Promise.all(sent.map(async (param1) => ({ param1, r: await postJson(web(), 'keep', { dest: 'keep', param1 }) })));
      await new Promise((resolve) => setTimeout(resolve, 5 + round * 10));
      process.kill(pid, 'SIGKILL');
      const answered = await replies;
      await restarted(t(), 'keep', pid);
      for (const { param1, r } of answered) {
        const ids = await idsWith(t(), 'keep', param1);
        const code = r.headers.get('x-rq-error');
        if (r.status === 200) {
          const reply = JSON.parse(r.text) as unknown[] | null;
          expect(reply?.[0], r.text).toBe('ok');
          expect(ids).toEqual([shortId(String(reply![1]))]);
          seen.ok++;
        } else {
          expect({ status: r.status, code }, r.text).toMatchObject({ status: 503 });
          expect(['RQ_UNAVAILABLE', 'RQ_OUTCOME_UNKNOWN']).toContain(code);
          if (code === 'RQ_UNAVAILABLE') {
            expect(ids, r.text).toEqual([]);
            seen.unavailable++;
          } else {
            expect(ids.length, r.text).toBeLessThanOrEqual(1);
            seen.unknown++;
          }
        }
      }
    }
    expect(seen.ok).toBeGreaterThan(0);
  });
});

describe('a create whose reply is lost while the queue process stays down', () => {
  // rq-mgr restarts a dead queue process only after 8 s, longer than a front door waits.
  const { t, web } = sharedInstall({
    env: { ...DIE_AT, RQ_RESTART_BACKOFF_MS: '8000' },
    setup: (root) => root.addQueue({ name: 'slow', num_workers: 0 }),
  });

  it('answers 503 RQ_OUTCOME_UNKNOWN naming the message, which a client can then ask for', async () => {
    const param1 = token();
    const pid = armDeath(t(), 'slow', 'reply');
    const r = await postJson(web(), 'slow', { dest: 'slow', param1 });
    expect(r.status, r.text).toBe(503);
    expect(r.headers.get('x-rq-error')).toBe('RQ_OUTCOME_UNKNOWN');
    const named = /the message it was making is (\S+): ask for it before you try again$/.exec(r.text)?.[1];
    expect(named, r.text).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/q\/slow\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
    await restarted(t(), 'slow', pid);
    const state = await web().get(`${new URL(named!).pathname}/state.json`);
    expect(await state.json()).toEqual(['que']);
    expect(await idsWith(t(), 'slow', param1)).toEqual([shortId(named!)]);
  });
});

describe('the pull front doors across a kill -9 of the queue process', () => {
  const NS = 'test';
  const TOKEN = 'tok-test-0123456789abcdef';
  const doors = sharedProtocols({ lmstfy: { tokens: { [NS]: [TOKEN] } }, cloudq: {}, rqms: {}, workq: {} }, { env: DIE_AT });
  const lmstfy = (q: string, body: string): Promise<Response> =>
    fetch(`${doors.base('lmstfy')}/api/${NS}/${q}`, { method: 'PUT', headers: { 'X-Token': TOKEN }, body });
  /** The messages of a pull queue, in any state but done. */
  const jobsIn = async (queue: string): Promise<string[]> => {
    const reply = (await doors.t().rpc(queue, 'search', { query: {}, exact: false })) as [string, { messages: Array<{ msg_id: string }> }];
    return reply[1].messages.map((m) => m.msg_id);
  };

  it.each(MOMENTS)('lmstfy: a publish killed at %s answers 201 with the one job made (not a 500: a retry that met its own commit)', async (moment) => {
    const q = `lm${moment}`;
    expect((await lmstfy(q, 'first')).status).toBe(201); // makes the queue
    const pid = armDeath(doors.t(), `${NS}.${q}`, moment);
    const r = await lmstfy(q, 'second');
    const body = (await r.json()) as { job_id?: string };
    await restarted(doors.t(), `${NS}.${q}`, pid);
    expect({ status: r.status, body }).toMatchObject({ status: 201, body: { msg: 'published', job_id: expect.any(String) } });
    const peek = await fetch(`${doors.base('lmstfy')}/api/${NS}/${q}/job/${body.job_id}`, { headers: { 'X-Token': TOKEN } });
    expect(await peek.json()).toMatchObject({ job_id: body.job_id, data: Buffer.from('second').toString('base64') });
    expect(await jobsIn(`${NS}.${q}`)).toHaveLength(2);
  });

  it('cloudq: a publish killed after its commit answers success with the one job made (not two)', async () => {
    const q = 'cq';
    const publish = (n: number): Promise<Response> =>
      fetch(`${doors.base('cloudq')}/${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ job: { klass: 'K', args: [n] } }) });
    expect((await publish(1)).status).toBe(200);
    const pid = armDeath(doors.t(), q, 'reply');
    const r = await publish(2);
    await restarted(doors.t(), q, pid);
    expect({ status: r.status, body: await r.json() }).toEqual({ status: 200, body: { status: 'success' } });
    const id = r.headers.get('x-cloudq-id')!;
    const jobs = await jobsIn(q);
    expect(jobs).toHaveLength(2);
    expect(jobs).toContain(id);
  });

  it('a queue with no process: each door answers its 503 (Workq: -SERVER-ERROR), saying to try again', async () => {
    for (const name of ['unrun1', 'unrun2', `${NS}.unrun3`, 'unrun4']) addUnservable(doors.t(), name);
    const workq = await WorkqClient.connect(doors.port('workq'));
    try {
      // Each waits RESTART_WAIT_MS for a process to come: all at once.
      const [cloudq, rqms, lm, wq] = await Promise.all([
        fetch(`${doors.base('cloudq')}/unrun1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"job":{"klass":"K","args":[]}}' }),
        fetch(`${doors.base('rqms')}/unrun2?id=a`, { method: 'POST', body: '1' }),
        lmstfy('unrun3', 'x'),
        workq.add('0a6c5e02-7b5f-4a52-9c3b-0d4f5c3e8a11', 'unrun4', 60_000, 600_000, 'x'),
      ]);
      expect({ status: cloudq.status, retry: cloudq.headers.get('retry-after'), body: await cloudq.json() }).toEqual({
        status: 503,
        retry: '1',
        body: { status: 'error', message: 'queue is restarting, try again later' },
      });
      expect({ status: rqms.status, text: await rqms.text() }).toEqual({ status: 503, text: 'That queue is just getting up again. Do try again in a moment.' });
      expect({ status: lm.status, retry: lm.headers.get('retry-after'), body: await lm.json() }).toEqual({
        status: 503,
        retry: '1',
        body: { error: 'the queue is restarting, try again later' },
      });
      expect(wq.text).toBe('-SERVER-ERROR Queue unrun4 is not answering (ENOENT), and nothing was done: try again\r\n');
    } finally {
      workq.destroy();
    }
  });
});
