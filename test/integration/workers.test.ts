/**
 * Forked workers end to end (docs/scripts.md): real bash scripts on a real queue
 * process, each fixture a worker that behaves or misbehaves in one way, and the state and
 * status text RQ's users see afterwards.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { SLOW_SPAWNER_ENV, TestRoot, childrenOf, pidAlive, shortId, waitFor, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

async function runOne(script: string, msg: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<{ id: string; state: string; status: string }> {
  t.addQueue({ name: 'w', script, ...extra });
  await t.start('w');
  const id = await t.send('w', msg);
  await waitFor(async () => ['done', 'err', 'relayed'].includes((await t.state('w', id)) ?? ''), 10_000, `${script} to finish`);
  return { id, state: (await t.state('w', id))!, status: (await t.statusOf('w', id))! };
}

describe('end of a run', () => {
  it('done with exit 0 → done, status from the last line', async () => {
    const r = await runOne('done.sh');
    expect(r).toMatchObject({ state: 'done', status: 'done - all good' });
    const log = fs.readFileSync(path.join(t.root, (await t.message('w', r.id))['path'] as string, 'job/stdio.log'), 'utf8');
    expect(log).toMatch(/^\d+ - \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - RQ START - \/.*\/done\.sh\n/);
    expect(log).toContain(`working on ${r.id}\n`);
  });

  it("stdio.log: each run's RQ START line comes first, before anything its script writes, with no empty line", async () => {
    // The script writes at once, and its spawner is held for 1.5 s after each fork (before it
    // can write the start line): the script must wait for its start line all the same.
    fs.writeFileSync(path.join(t.root, 'hasty.sh'), '#!/bin/sh\necho "run $RQ_COUNT says hello"\n[ "$RQ_COUNT" = 0 ] && echo "resend 0-again" >&3 || echo "done twice" >&3\n', {
      mode: 0o755,
    });
    t.addQueue({ name: 'w', script: './hasty.sh', exec_prefix: '' });
    await t.start('w', SLOW_SPAWNER_ENV);
    const id = await t.send('w', {});
    expect(await t.waitState('w', id, 'done', 20_000)).toBe('done - twice');
    const log = fs.readFileSync(path.join(t.root, (await t.message('w', id))['path'] as string, 'job/stdio.log'), 'utf8');
    const start = expect.stringMatching(/^\d+ - \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - RQ START - \/.*\/hasty\.sh$/);
    expect(log.split('\n')).toEqual([start, 'run 0 says hello', start, 'run 1 says hello', '']);
  });

  it('err with exit 0 → err - by design', async () => {
    expect(await runOne('err.sh')).toMatchObject({ state: 'err', status: 'err - by design' });
  });

  it('done then exit 1 → err, PROCESS EXITED IMPROPERLY', async () => {
    const r = await runOne('sneaky.sh');
    expect(r.state).toBe('err');
    expect(r.status).toMatch(/^err - PROCESS EXITED IMPROPERLY - MOVING TO ERR - Completion was done but exit status was pid \d+ exit 1$/);
  });

  it('exit 0 without a completion → err, status unchanged', async () => {
    expect(await runOne('silent.sh')).toMatchObject({ state: 'err', status: 'err - just progress' });
  });

  it('death by a signal after done → err naming the signal', async () => {
    const r = await runOne('crash.sh');
    expect(r.status).toMatch(/^err - PROCESS EXITED IMPROPERLY - MOVING TO ERR - Completion was done but exit status was pid \d+ SIGSEGV \(signal 11\)$/);
  });

  it('garbage and partial lines on the pipe cannot hurt the queue', async () => {
    const r = await runOne('garbage.sh');
    // "fail ..." is not a completion, and a line split across two writes is still one line.
    expect(r).toMatchObject({ state: 'done', status: 'done - split across writes' });
    expect(await t.rpc('w', 'ping', '')).toEqual(['pong']);
  });

  it('a worker writing faster than its queue process reads is held back, not buffered by its spawner', async () => {
    t.addQueue({ name: 'w', script: 'torrent.sh' });
    const queue = await t.start('w');
    const id = await t.send('w', {});
    const [spawner] = childrenOf(queue.pid!);
    await waitFor(() => childrenOf(spawner!).length > 0, 10_000, 'the spawner to start the worker');
    const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${spawner}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    // The queue process stops reading for 2 s while the worker writes all it can.
    process.kill(queue.pid!, 'SIGSTOP');
    let grown: number;
    try {
      await new Promise((r) => setTimeout(r, 2_000));
      grown = rssMb() - before;
    } finally {
      process.kill(queue.pid!, 'SIGCONT');
    }
    expect(grown).toBeLessThan(32);
    await waitFor(async () => (await t.state('w', id)) === 'done', 60_000, 'the torrent to be read');
    expect(await t.statusOf('w', id)).toBe('done - torrent');
  });

  it('a flood of lines and an endless line on the pipe cannot hurt the queue', async () => {
    const r = await runOne('flood.sh');
    expect(r).toMatchObject({ state: 'done', status: 'done - flooded' });
    expect(await t.rpc('w', 'ping', '')).toEqual(['pong']);
  });

  it('a missing script is SCRIPTERROR, and the queue recovers when the script appears', async () => {
    t.addQueue({ name: 'w', script: 'later.sh' });
    await t.start('w');
    const id = await t.send('w', {});
    expect(await t.rpc('w', 'status', '')).toEqual(['SCRIPTERROR']);
    expect(await t.state('w', id)).toBe('run');
    const later = path.join(t.root, 'later.sh');
    fs.writeFileSync(later, '#!/bin/sh\necho done fixed >&3\n', { mode: 0o755 });
    fs.writeFileSync(path.join(t.queueDir('w'), 'config.json'), JSON.stringify({ name: 'w', script: './later.sh', num_workers: 1, exec_prefix: '' }));
    process.kill(Number(fs.readFileSync(path.join(t.queueDir('w'), 'queue.pid'), 'utf8')), 'SIGHUP');
    expect(await t.waitState('w', id, 'done')).toBe('done - fixed');
    expect(await t.rpc('w', 'status', '')).toEqual(['UP']);
  });
});

describe('timeout (beyond RQ)', () => {
  it('kills the whole process group and moves the message to err', async () => {
    const r = await runOne('hang.sh', {}, { timeout: 0.5 });
    expect(r.state).toBe('err');
    expect(r.status).toMatch(/^err - TIMEOUT - killed after 0\.5s - MOVING TO ERR - pid \d+ SIGTERM \(signal 15\)$/);
    const jobDir = path.join(t.root, (await t.message('w', r.id))['path'] as string, 'job');
    const grandchild = Number(fs.readFileSync(path.join(jobDir, 'child.pid'), 'utf8'));
    await waitFor(() => !pidAlive(grandchild), 3000, 'the script’s child to be killed with its group');
  });
});

describe('resend, count and max_count', () => {
  it('resends until done, counting each resend', async () => {
    t.addQueue({ name: 'w', script: 'resend.sh' });
    await t.start('w');
    const id = await t.send('w', { param1: '6', max_count: 8 });
    expect(await t.waitState('w', id, 'done')).toBe('done - after 6');
    expect(await t.message('w', id)).toMatchObject({ count: 6, max_count: 8 });
  });

  it('hits the max resend count and goes to err', async () => {
    t.addQueue({ name: 'w', script: 'resend.sh' });
    await t.start('w');
    const id = await t.send('w', { param1: '6', count: 2, max_count: 3 });
    expect(await t.waitState('w', id, 'err')).toBe('err - HIT MAX RESEND COUNT - MOVING TO ERR');
    expect(await t.message('w', id)).toMatchObject({ count: 3 });
  });

  it('a resend delay makes the message wait in que', async () => {
    t.addQueue({ name: 'w', script: './later.sh' });
    fs.writeFileSync(path.join(t.root, 'later.sh'), '#!/bin/sh\n[ "$RQ_COUNT" = 0 ] && echo "resend 3600-later" >&3 || echo done >&3\n', { mode: 0o755 });
    await t.start('w');
    const id = await t.send('w', {});
    await t.waitState('w', id, 'que');
    const msg = await t.message('w', id);
    expect(msg['count']).toBe(1);
    expect(Number(msg['due'])).toBeGreaterThan(Date.now() / 1000 + 3500);
    expect(await t.rpc('w', 'messages', { state: 'que' })).toEqual([{ msg_id: id, due: msg['due'], dest: 'w' }]);
  });
});

describe('worker environment', () => {
  it('gets the RQ_* variables, env_vars (never overriding RQ_*), cwd job/, and fds 3 and 4', async () => {
    const r = await runOne('env.sh', { param1: 'p1', param3: null, force_remote: true }, { env_vars: { MY_VAR: 'mine', RQ_MSG_ID: 'hijack' } });
    expect(r.state).toBe('done');
    const view = await t.message('w', r.id);
    const jobDir = path.join(t.root, view['path'] as string, 'job');
    const env = Object.fromEntries(
      fs.readFileSync(path.join(jobDir, 'env.txt'), 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({
      RQ_VER: '1.18.3',
      RQ_SCRIPT: './scripts/env.sh',
      RQ_HOST: 'http://127.0.0.1:3333/',
      RQ_DEST: 'http://127.0.0.1:3333/q/w',
      RQ_DEST_QUEUE: 'w',
      RQ_MSG_ID: r.id,
      RQ_FULL_MSG_ID: `http://127.0.0.1:3333/q/w/${r.id}`,
      RQ_ORIG_MSG_ID: `http://127.0.0.1:3333/q/w/${r.id}`,
      RQ_MSG_DIR: path.join(t.root, 'queue/w/run', r.id, 'job'),
      RQ_WRITE: '3',
      RQ_READ: '4',
      RQ_PIPE: '3',
      RQ_COUNT: '0',
      RQ_PARAM1: 'p1',
      RQ_PARAM2: '',
      RQ_PARAM3: '',
      RQ_FORCE_REMOTE: '1',
      MY_VAR: 'mine',
    });
    expect(env['RQ_REALSCRIPT']).toMatch(/test\/fixtures\/scripts\/env\.sh$/);
    expect(fs.readFileSync(path.join(jobDir, 'cwd.txt'), 'utf8').trim()).toBe(path.join(fs.realpathSync(t.queueDir('w')), 'run', r.id, 'job'));
    const fds = fs.readFileSync(path.join(jobDir, 'fds.txt'), 'utf8');
    expect(fds).toMatch(/ 0 -> \/dev\/null/);
    expect(fds).toMatch(/ 1 -> .*stdio\.log/);
    expect(fds).toMatch(/ 3 -> socket:/);
    expect(fds).toMatch(/ 4 -> socket:/);
    expect(fds).not.toMatch(/ 5 -> /);
  });

  it('runs through bash -lc when exec_prefix is absent', async () => {
    t.addQueue({ name: 'w', script: 'env.sh', exec_prefix: null });
    await t.start('w');
    const id = await t.send('w', {});
    expect(await t.waitState('w', id, 'done')).toBe('done - env');
  });
});

describe('dup', () => {
  it('copies the message (with attachments) into another queue and answers ok <id> on fd 4', async () => {
    t.addQueue({ name: 'src', script: 'dup.sh' });
    t.addQueue({ name: 'other', script: 'done.sh' });
    await t.start('src');
    await t.start('other');
    const [, full] = (await t.rpc('src', 'prep_message', { dest: 'src', src: 'dru4', param1: 'other', param2: 'dup_direct' })) as [string, string];
    const file = path.join(t.root, 'a.txt');
    fs.writeFileSync(file, 'attached');
    await t.rpc('src', 'attach_message', { msg_id: shortId(full), pathname: file });
    await t.rpc('src', 'commit_message', { msg_id: shortId(full) });
    const id = shortId(full);
    const status = await t.waitState('src', id, 'done');
    const copyFull = status.replace(/^done - dup ok /, '');
    expect(copyFull).toMatch(/^http:\/\/127\.0\.0\.1:3333\/q\/other\/\d{8}\./);
    const copy = shortId(copyFull);
    await t.waitState('other', copy, 'done');
    const view = await t.message('other', copy);
    expect(view).toMatchObject({ dest: 'other', src: 'dru4', param2: 'dup_direct', count: 0, orig_msg_id: full });
    expect(Object.keys(view['_attachments'] as object)).toEqual(['a.txt']);
  });

  it('dup to its own queue is served in-process; dup to a missing queue fails with RQ text', async () => {
    t.addQueue({ name: 'src', script: 'dup.sh' });
    await t.start('src');
    const missing = await t.send('src', { param1: 'nope_this_q_does_not_exist' });
    expect(await t.waitState('src', missing, 'err')).toBe("err - fail couldn't connect to queue - nope_this_q_does_not_exist");
    const traversal = await t.send('src', { param1: '../../etc' });
    expect(await t.waitState('src', traversal, 'err')).toBe("err - fail couldn't connect to queue - ../../etc");
    fs.writeFileSync(path.join(t.root, 'once.sh'), '#!/bin/bash\nif [ "$RQ_PARAM1" = self ]; then echo "dup 0-X-src" >&3; read -u 4 r; echo "done $r" >&3; else echo "done copy" >&3; fi\n', { mode: 0o755 });
    fs.writeFileSync(path.join(t.queueDir('src'), 'config.json'), JSON.stringify({ name: 'src', script: './once.sh', num_workers: 1, exec_prefix: '' }));
    process.kill(Number(fs.readFileSync(path.join(t.queueDir('src'), 'queue.pid'), 'utf8')), 'SIGHUP');
    await waitFor(async () => ((await t.rpc('src', 'config', '')) as [string, { script: string }])[1].script === './once.sh');
    const self = await t.send('src', { param1: 'self' });
    const status = await t.waitState('src', self, 'done');
    expect(status).toMatch(/^done - ok http:\/\/127\.0\.0\.1:3333\/q\/src\//);
    await t.waitState('src', shortId(status.slice('done - ok '.length)), 'done');
  });
});

describe('destroy', () => {
  it('TERMs a running worker; the run ends as an improper exit in err', async () => {
    t.addQueue({ name: 'w', script: 'hang.sh' });
    await t.start('w');
    const id = await t.send('w', {});
    await waitFor(() => fs.existsSync(path.join(t.queueDir('w'), 'run', id, 'pid')));
    expect(await t.rpc('w', 'destroy_message', { msg_id: id })).toEqual(['ok', 'msg destroyed']);
    expect(await t.waitState('w', id, 'err')).toMatch(/^err - PROCESS EXITED IMPROPERLY - MOVING TO ERR - no completion line, and exit status was pid \d+ SIGTERM \(signal 15\)$/);
    expect(await t.rpc('w', 'destroy_message', { msg_id: id })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(fs.existsSync(path.join(t.queueDir('w'), 'err', id, 'pid'))).toBe(false);
  });

  it('TERMs a worker that is still starting as soon as it has started', async () => {
    t.addQueue({ name: 'w', script: 'hang.sh' });
    // The spawner holds each spawn for 1.5 s after the fork.
    await t.start('w', SLOW_SPAWNER_ENV);
    const id = await t.send('w', {});
    expect(await t.state('w', id)).toBe('run');
    expect(fs.existsSync(path.join(t.queueDir('w'), 'run', id, 'pid'))).toBe(false);
    expect(await t.rpc('w', 'destroy_message', { msg_id: id })).toEqual(['ok', 'msg destroyed']);
    expect(await t.waitState('w', id, 'err')).toMatch(/SIGTERM \(signal 15\)$/);
  });
});

describe('spawners', () => {
  it('a spawner with no runs for RQ_SPAWNER_IDLE_MS exits, and the next message starts a new one', async () => {
    t.addQueue({ name: 'w', script: 'done.sh' });
    const queue = await t.start('w', { RQ_SPAWNER_IDLE_MS: '3000' });
    expect(childrenOf(queue.pid!)).toEqual([]);
    const first = await t.send('w', {});
    expect(await t.waitState('w', first, 'done')).toBe('done - all good');
    const [spawner] = childrenOf(queue.pid!);
    expect(spawner).toBeDefined();
    await waitFor(() => childrenOf(queue.pid!).length === 0, 10_000, 'the idle spawner to exit');
    expect(pidAlive(spawner!)).toBe(false);
    const second = await t.send('w', {});
    expect(await t.waitState('w', second, 'done')).toBe('done - all good');
  });
});

describe('attachments across filesystems', () => {
  it('copies a file it cannot hard-link (EXDEV), keeping its content and md5', async () => {
    t.addQueue({ name: 'w', num_workers: 0 });
    await t.start('w');
    const file = path.join('/dev/shm', `rq-test-${process.pid}-${Date.now()}.txt`);
    fs.writeFileSync(file, 'from another filesystem');
    try {
      const [, full] = (await t.rpc('w', 'prep_message', { dest: 'w' })) as [string, string];
      const id = shortId(full);
      const reply = (await t.rpc('w', 'attach_message', { msg_id: id, pathname: file, name: 'far.txt' })) as [string, string];
      const md5 = crypto.createHash('md5').update('from another filesystem').digest('hex');
      expect(reply).toEqual(['ok', `${md5}-Attached successfully`]);
      const copy = path.join(t.queueDir('w'), 'prep', id, 'attach', 'far.txt');
      expect(fs.readFileSync(copy, 'utf8')).toBe('from another filesystem');
      expect(fs.statSync(copy).ino).not.toBe(fs.statSync(file).ino);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});
