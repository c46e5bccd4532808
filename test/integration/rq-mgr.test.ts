/**
 * rq-mgr, the supervisor (docs/processes.md, docs/socket.md): the real `bin/rq-mgr` on a temp
 * install root (daemonised by `start`, or in the foreground with `run`), its socket
 * commands with RQ's exact replies, restarts of dead queue processes, clean stops, stale
 * pid files, and config errors with RQ's messages.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { REPO, TestRoot, freePort, halfClosedCall, pidAlive, useTestRoot, waitFor } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

async function startMgr(): Promise<void> {
  await t.usePort();
  const r = await t.bin('rq-mgr', ['start']);
  expect(r.stdout).toMatch(/^queuemgr: process with pid \d+ started\.\n$/);
  expect(r.code).toBe(0);
}

describe('rq-mgr start, status, stop', () => {
  it('starts the queues and the web, says so twice, and stops everything cleanly', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    const port = await t.usePort();
    expect((await t.bin('rq-mgr', ['start'])).code).toBe(0);
    const pid = t.pidIn('config/queuemgr.pid')!;
    const web = await fetch(`http://127.0.0.1:${port}/`);
    expect(await web.text()).toMatch(/QUEUEMGR:.*OPERATIONAL/);
    expect(await t.rpc('q1', 'ping', '')).toEqual(['pong']);
    expect(await t.bin('rq-mgr', ['start'])).toMatchObject({ code: 0, stdout: 'ERROR: there is already one or more instance(s) of the program running\n' });
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 0, stdout: `queuemgr: running [pid ${pid}]\n` });
    const queuePid = t.pidIn('queues/q1/queue.pid')!;
    const stop = await t.bin('rq-mgr', ['stop']);
    expect(stop).toMatchObject({ code: 0, stdout: `queuemgr: trying to stop process with pid ${pid}...\nqueuemgr: process with pid ${pid} successfully stopped.\n` });
    expect(pidAlive(pid)).toBe(false);
    await waitFor(() => !pidAlive(queuePid), 2000, 'the queue process to stop');
    expect(fs.existsSync(path.join(t.root, 'config/queuemgr.pid'))).toBe(false);
    expect(fs.existsSync(path.join(t.root, 'config/queuemgr.sock'))).toBe(false);
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 3, stderr: 'queuemgr: no instances running\n' });
    expect(await t.bin('rq-mgr', ['stop'])).toMatchObject({ code: 0, stdout: '' });
  });

  it('replaces a stale pid file, even one naming a live process that is not rq-mgr', async () => {
    fs.writeFileSync(path.join(t.root, 'config/queuemgr.pid'), `${process.pid}\n`);
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 3 });
    await startMgr();
    expect(t.pidIn('config/queuemgr.pid')).not.toBe(process.pid);
  });

  it('keeps waiting messages across stop and start', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await startMgr();
    fs.writeFileSync(path.join(t.root, 'config/q1.pause'), '');
    const ids = [await t.send('q1', {}), await t.send('q1', {})];
    await t.bin('rq-mgr', ['stop']);
    fs.rmSync(path.join(t.root, 'config/q1.pause'));
    await startMgr();
    for (const id of ids) await t.waitState('q1', id, 'done');
  });

  it('refuses a missing, non-JSON or bad-tmpdir config.json with RQ’s messages', async () => {
    // RQ's line first, then what was wrong.
    fs.writeFileSync(path.join(t.root, 'config/config.json'), '{nope');
    expect(await t.bin('rq-mgr', ['start'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^Bad config file\. Exiting\n.*JSON.*\n$/) });
    fs.rmSync(path.join(t.root, 'config/config.json'));
    expect(await t.bin('rq-mgr', ['start'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^Bad config file\. Exiting\nENOENT: no such file or directory.*\n$/) });
    fs.writeFileSync(path.join(t.root, 'config/config.json'), JSON.stringify({ port: '1', tmpdir: '/no/such/dir' }));
    expect(await t.bin('rq-mgr', ['start'])).toMatchObject({
      code: 1,
      stderr: "Bad 'tmpdir' in config json [/no/such/dir]. Exiting\n/no/such/dir: no such directory\n",
    });
    fs.writeFileSync(path.join(t.root, 'config/config.json'), JSON.stringify({ port: '1', tmpdir: 'config/config.json' }));
    expect(await t.bin('rq-mgr', ['run'])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `Bad 'tmpdir' in config json [config/config.json]. Exiting\n${path.join(t.root, 'config/config.json')}: not a directory\n`,
    });
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 3 });
  });

  it('run: rq-mgr in the foreground, log lines on stdout, until TERM', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.usePort();
    const run = spawn(path.join(REPO, 'bin/rq-mgr'), ['run'], { env: { ...process.env, RQ_ROOT: t.root, RQ_FATAL_DELAY_MS: '0' } });
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    run.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => run.once('exit', (code) => resolve(code)));
    await waitFor(() => stderr.includes('rq is running'), 10_000, 'rq-mgr run to say it runs');
    expect(stderr).toMatch(/^rq is running: open http:\/\/127\.0\.0\.1:\d+\/ \(Ctrl-C stops it\)\n$/);
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 0, stdout: `queuemgr: running [pid ${run.pid}]\n` });
    expect(await t.mgr('queues')).toEqual(['q1']);
    expect(await t.bin('rq-mgr', ['run'])).toMatchObject({ code: 1, stdout: 'ERROR: there is already one or more instance(s) of the program running\n' });
    run.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(expect.arrayContaining(['rq-mgr started', 'rq-mgr stopped']));
    expect(fs.existsSync(path.join(t.root, 'config/queuemgr.pid'))).toBe(false);
  });
});

describe('signals', () => {
  it('reload (HUP) starts a queue directory made by hand and reloads the others', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh', num_workers: 1 });
    await startMgr();
    t.addQueue({ name: 'later', script: 'done.sh' });
    fs.writeFileSync(path.join(t.queueDir('q1'), 'config.json'), JSON.stringify({ name: 'q1', script: './scripts/done.sh', num_workers: 3, exec_prefix: '' }));
    expect(await t.bin('rq-mgr', ['reload'])).toMatchObject({ code: 0 });
    await waitFor(async () => JSON.stringify(await t.mgr('queues')) === '["q1","later"]', 5000, 'the new queue to be started');
    await waitFor(async () => ((await t.rpc('q1', 'config', '')) as [string, { num_workers: number }])[1].num_workers === 3, 2000, 'q1 to reload');
    await waitFor(async () => (await t.rpc('later', 'ping', '')) !== null, 5000, 'the new queue to answer');
  });

  it('reload opens a front door added to config.json, and keeps the web serving through a config it cannot start with', async () => {
    const webPort = await t.usePort();
    expect(await t.bin('rq-mgr', ['start'])).toMatchObject({ code: 0 });
    const log = (): string => fs.readFileSync(path.join(t.root, 'log/rq.log'), 'utf8');
    const answers = async (port: number, urlPath: string): Promise<number | undefined> => {
      try {
        return (await fetch(`http://127.0.0.1:${port}${urlPath}`)).status;
      } catch {
        return undefined;
      }
    };
    // A config the web could not start with: said in the log, and the running web serves on.
    t.setMainConfig({ protocols: { rqms: { port: 'not a port' } } });
    expect(await t.bin('rq-mgr', ['reload'])).toMatchObject({ code: 0 });
    await waitFor(() => log().includes('config.json changed, but the web process cannot start with it'), 5000, 'the refusal in the log');
    expect(await answers(webPort, '/css/rq.css')).toBe(200);
    // A door added: it opens, without a restart of rq-mgr.
    const rqmsPort = await freePort();
    t.setMainConfig({ protocols: { rqms: { port: rqmsPort } } });
    expect(await t.bin('rq-mgr', ['reload'])).toMatchObject({ code: 0 });
    await waitFor(async () => (await answers(rqmsPort, '/favicon.ico')) === 404, 10_000, 'the RQMS door to open');
    await waitFor(async () => (await answers(webPort, '/css/rq.css')) === 200, 10_000, 'the new web process to serve');
    // Started anew on purpose: not counted as a death.
    expect(await t.mgr('restarts')).toEqual({ queues: {}, web: 0 });
  });

  it('reopens log/rq.log on SIGUSR1 (logrotate)', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await startMgr();
    const log = path.join(t.root, 'log/rq.log');
    fs.renameSync(log, `${log}.1`);
    process.kill(t.pidIn('config/queuemgr.pid')!, 'SIGUSR1');
    await waitFor(() => fs.existsSync(log), 2000, 'a new log file');
    const id = await t.send('q1', {});
    await t.waitState('q1', id, 'done');
    await waitFor(() => fs.readFileSync(log, 'utf8').includes(`"msg_id":"${id}"`), 3000, 'the run to be logged in the new file');
    const line = fs.readFileSync(log, 'utf8').split('\n').find((l) => l.includes(`"msg_id":"${id}"`))!;
    expect(JSON.parse(line)).toMatchObject({ queue: 'q1', msg_id: id, pid: t.pidIn('queues/q1/queue.pid'), msg: 'run ended' });
  });
});

describe('supervision', () => {
  it('restarts a queue process killed with -9, and nothing is lost', async () => {
    t.addQueue({ name: 'q1', script: 'sleep.sh' });
    await startMgr();
    const ids = [await t.send('q1', { param2: '0.2' }), await t.send('q1', { param2: '0.2' }), await t.send('q1', { param2: '0.2' })];
    const before = t.pidIn('queues/q1/queue.pid')!;
    process.kill(before, 'SIGKILL');
    await waitFor(() => (t.pidIn('queues/q1/queue.pid') ?? before) !== before, 5000, 'a new queue process');
    for (const id of ids) await t.waitState('q1', id, 'done');
  });

  it('gives up after 10 restarts and keeps the queue listed; restart_queue revives it', async () => {
    t.addQueue({ name: 'bad', script: 'done.sh' });
    await startMgr();
    // A broken config makes every restart die at once.
    fs.writeFileSync(path.join(t.queueDir('bad'), 'config.json'), '{broken');
    process.kill(t.pidIn('queues/bad/queue.pid')!, 'SIGKILL');
    await waitFor(() => fs.readFileSync(path.join(t.root, 'log/rq.log'), 'utf8').includes('FAILED [ bad - too many restarts. Not restarting ]'), 10_000, 'the restart limit');
    expect(await t.mgr('queues')).toEqual(['bad']);
    fs.writeFileSync(path.join(t.queueDir('bad'), 'config.json'), JSON.stringify({ name: 'bad', script: './scripts/done.sh', num_workers: 1, exec_prefix: '' }));
    expect(await t.mgr('restart_queue', 'bad')).toEqual(['ok', 'bad']);
    expect(await t.rpc('bad', 'ping', '')).toEqual(['pong']);
  });

  it('queue and web processes exit when rq-mgr is killed with -9', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await startMgr();
    const queuePid = t.pidIn('queues/q1/queue.pid')!;
    process.kill(t.pidIn('config/queuemgr.pid')!, 'SIGKILL');
    await waitFor(() => !pidAlive(queuePid), 5000, 'the orphaned queue process to exit');
    expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 3 });
    await startMgr();
  });
});

describe('rq-mgr commands', () => {
  it('answers ping, version, environment, uptime and queues', async () => {
    t.addQueue({ name: 'b', script: 'done.sh' });
    t.addQueue({ name: 'a', script: 'done.sh' });
    const before = Date.now();
    await startMgr();
    expect(await t.mgr('ping')).toEqual(['pong']);
    expect(await t.mgr('version')).toEqual(['1.18.3']);
    expect(await t.mgr('environment')).toEqual(['test']);
    // Whole seconds since rq-mgr started, so no more than the seconds since this test began.
    const [uptime] = (await t.mgr('uptime')) as [number];
    expect(Number.isInteger(uptime)).toBe(true);
    expect(uptime).toBeLessThanOrEqual(Math.ceil((Date.now() - before) / 1000));
    expect(await t.mgr('queues')).toEqual(['a', 'b']);
    expect(await t.mgr('bogus')).toEqual(['error']);
  });

  it('creates queues, refusing bad names and duplicates', async () => {
    await startMgr();
    const spec = (name: string): string => JSON.stringify({ name, script: './scripts/done.sh', num_workers: '1', exec_prefix: '', coalesce_params: ['1'] });
    expect(await t.mgr('create_queue', spec('fresh'))).toEqual(['success', 'queue created - awesome']);
    expect(fs.readFileSync(path.join(t.queueDir('fresh'), 'config.json'), 'utf8')).toBe(
      '{"name":"fresh","script":"./scripts/done.sh","num_workers":1,"exec_prefix":"","env_vars":{},"coalesce_params":[1],"blocking_params":[],"schedule":[]}',
    );
    expect(await t.rpc('fresh', 'ping', '')).toEqual(['pong']);
    expect(await t.mgr('create_queue', spec('fresh'))).toEqual(['fail', 'already created']);
    // Names RQ's rule allows but that are not ASCII: new queues may not look like another (ｓｅｃ, sec + U+200B).
    for (const bad of ['bad que test', 'bad.que.test', 'bad/que/test', '../escape', '', '\uff53\uff45\uff43', 'sec\u200b', 'a\u202eb', 'sec\u00ad', 'café']) {
      expect(await t.mgr('create_queue', spec(bad))).toEqual(['fail', 'queue name has invalid characters']);
    }
    expect(fs.readdirSync(path.join(t.root, 'queues'))).toEqual(['fresh']);
    expect(await t.mgr('create_queue', 'not json')).toEqual(['fail', 'queue not created']);
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    expect(await t.mgr('create_queue', `{"name":"deep","script":"./scripts/done.sh","num_workers":1,"env_vars":{"X":${deep}}}`)).toEqual(['fail', 'queue not created']);
    expect(await t.mgr('create_queue', JSON.stringify({ name: 'noscript', script: './nope.sh', num_workers: '1' }))).toEqual([
      'fail',
      'queue not created: script ./nope.sh does not exist or is not executable',
    ]);
    expect(fs.existsSync(t.queueDir('noscript'))).toBe(false);
  });

  it('answers a client that half-closes after its request, as `printf … | socat -` does', async () => {
    await startMgr();
    const sock = path.join(t.root, 'config/queuemgr.sock');
    expect(await halfClosedCall(sock, 'ping', '')).toEqual(['pong']);
    const spec = JSON.stringify({ name: 'halfq', script: './scripts/done.sh', num_workers: '1', exec_prefix: '' });
    expect(await halfClosedCall(sock, 'create_queue', spec)).toEqual(['success', 'queue created - awesome']);
    expect(await t.rpc('halfq', 'ping', '')).toEqual(['pong']);
    expect(await halfClosedCall(sock, 'pause_queue', 'halfq')).toEqual(['ok', 'halfq']);
  });

  it('creates a queue by link, validating the file in RQ’s order', async () => {
    await startMgr();
    const write = (file: string, value: unknown): string => {
      fs.writeFileSync(path.join(t.root, file), typeof value === 'string' ? value : JSON.stringify(value));
      return file;
    };
    expect(await t.mgr('create_queue_link', write('x.json', '{'))).toEqual(['fail', expect.stringMatching(/^could not read queue config \[ x\.json \]: /)]);
    expect(await t.mgr('create_queue_link', write('x.json', { num_workers: 1 }))).toEqual(['fail', 'json config is missing name field']);
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    expect(await t.mgr('create_queue_link', write('x.json', `{"name":"deep","num_workers":1,"script":${deep}}`))).toEqual(['fail', 'could not read queue config [ x.json ]: nested too deep']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: '' }))).toEqual(['fail', 'json config has invalid name (size)']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: 'l', num_workers: '0' }))).toEqual(['fail', 'json config has invalid num_workers field (out of range 1..128)']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: 'l', num_workers: 1 }))).toEqual(['fail', 'json config is missing script field']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: 'l.x', num_workers: 1, script: 's' }))).toEqual(['fail', 'queue name has invalid characters']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: 'relay\u200b', num_workers: 1, script: './scripts/done.sh' }))).toEqual(['fail', 'queue name has invalid characters']);
    expect(await t.mgr('create_queue_link', write('x.json', { name: 'l', num_workers: 1, script: './nope.sh' }))).toEqual([
      'fail',
      'queue not created: script ./nope.sh does not exist or is not executable',
    ]);
    expect(await t.mgr('create_queue_link', write('good.json', { name: 'linked', num_workers: '1', script: './scripts/done.sh', exec_prefix: '' }))).toEqual(['success', 'queue created - awesome']);
    expect(fs.lstatSync(path.join(t.queueDir('linked'), 'config.json')).isSymbolicLink()).toBe(true);
    expect(await t.mgr('create_queue_link', 'good.json')).toEqual(['fail', 'queue is already running']);
    const id = await t.send('linked', {});
    await t.waitState('linked', id, 'done');
  });

  it('refuses to link a FIFO, a file over 1 MiB or a file outside the root, and keeps answering', async () => {
    await startMgr();
    execFileSync('mkfifo', [path.join(t.root, 'fifo.json')]);
    fs.writeFileSync(path.join(t.root, 'big.json'), JSON.stringify({ name: 'big', num_workers: 1, script: './scripts/done.sh', pad: 'x'.repeat(1024 * 1024) }));
    for (const file of ['fifo.json', 'big.json', '../outside.json']) {
      expect(await t.mgr('create_queue_link', file)).toEqual(['fail', expect.stringMatching(new RegExp(`^could not read queue config \\[ ${file.replace(/\./g, '\\.')} \\]: `))]);
      expect(await t.mgr('ping')).toEqual(['pong']);
    }
    expect(await t.mgr('queues')).toEqual([]);
  });

  it('pauses, resumes, downs and ups through the flag files', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await startMgr();
    const flag = (ext: string): boolean => fs.existsSync(path.join(t.root, `config/q1.${ext}`));
    expect(await t.mgr('pause_queue', 'q1')).toEqual(['ok', 'q1']);
    expect(flag('pause')).toBe(true);
    expect(await t.rpc('q1', 'status', '')).toEqual(['PAUSE']);
    expect(await t.mgr('down_queue', 'q1')).toEqual(['ok', 'q1']);
    expect(await t.rpc('q1', 'status', '')).toEqual(['DOWN']);
    expect(await t.mgr('up_queue', 'q1')).toEqual(['ok', 'q1']);
    expect(await t.mgr('resume_queue', 'q1')).toEqual(['ok', 'q1']);
    expect([flag('pause'), flag('down')]).toEqual([false, false]);
    expect(await t.rpc('q1', 'status', '')).toEqual(['UP']);
    expect(await t.mgr('pause_queue', 'nope')).toEqual(['fail', 'invalid queue name', 'RQ_QUEUE_NOT_FOUND']);
    expect(await t.mgr('pause_queue', '../q1')).toEqual(['fail', 'invalid queue name', 'RQ_QUEUE_NOT_FOUND']);
    expect(await t.mgr('restart_queue', 'nope')).toEqual(['fail', 'no such queue', 'RQ_QUEUE_NOT_FOUND']);
  });

  it('deletes a queue by renaming it to <name>.deleted.<inode>, keeping its messages', async () => {
    t.addQueue({ name: 'gone', script: 'done.sh', num_workers: 0 });
    await startMgr();
    const id = await t.send('gone', {});
    const ino = fs.statSync(t.queueDir('gone')).ino;
    expect(await t.mgr('delete_queue', 'gone')).toEqual(['ok', 'started deleting queue']);
    await waitFor(() => fs.existsSync(path.join(t.root, `queues/gone.deleted.${ino}`)), 5000, 'the rename');
    expect(fs.existsSync(path.join(t.root, `queues/gone.deleted.${ino}/que/${id}/msg`))).toBe(true);
    expect(await t.mgr('queues')).toEqual([]);
    expect(await t.mgr('delete_queue', 'gone')).toEqual(['fail', 'no such queue']);
  });
});
