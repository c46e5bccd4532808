/**
 * The locks that keep one writer per queue, one rq-mgr per install root and one web
 * process on the root's ports (src/lib/process-lock.ts): a second process refuses to
 * start and names the holder, or, when the holder is on its way out, waits for it and
 * says so. Real processes on a temp install root.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SLOW_SPAWNER_ENV, TestRoot, childrenOf, pidAlive, useTestRoot, waitFor } from '../helpers/install.js';
import { REPO } from '../helpers/run-bin.js';
import { startLoneWeb } from '../helpers/web.js';

const root = useTestRoot();

/** A process of one of rq's entry files on the root (TestRoot.spawnEntry), and its exit code once it has exited. */
function run(t: TestRoot, entry: string, args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const { child, output } = t.spawnEntry(entry, args, { RQ_RESTART_BACKOFF_MS: '5' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}

/** The exit code, or `running` if the process has not exited within `ms` (it is then killed). */
async function exitWithin(p: ReturnType<typeof run>, ms: number): Promise<number | null | 'running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'running'>((resolve) => (timer = setTimeout(() => resolve('running'), ms)));
  const result = await Promise.race([p.exited, late]);
  clearTimeout(timer);
  if (result === 'running') {
    p.child.kill('SIGKILL');
    await p.exited;
  }
  return result;
}

const rqLog = (t: TestRoot): string => {
  try {
    return fs.readFileSync(path.join(t.root, 'log/rq.log'), 'utf8');
  } catch {
    return '';
  }
};

describe('one process per queue', () => {
  it('a second process for a queue refuses to start, naming the one that serves it, which serves on', async () => {
    const t = root();
    t.addQueue({ name: 'q', script: 'done.sh' });
    const first = await t.start('q');
    const second = run(t, 'dist/src/queue/queue-main.js', ['q']);
    expect(await exitWithin(second, 10_000)).toBe(1);
    expect(second.output()).toContain(`"msg":"queue q is already served by pid ${first.pid}. Exiting."`);
    expect(t.pidIn('queues/q/queue.pid')).toBe(first.pid);
    const id = await t.send('q', {});
    await t.waitState('q', id, 'done');
  });

  it('a queue process whose predecessor is exiting waits for it, says so, then serves alone', async () => {
    const t = root();
    t.addQueue({ name: 'r', script: 'wait-go.sh' });
    // The spawner holds its first spawn for 1.5 s, so the stopping queue process waits its full second for it.
    const first = await t.start('r', SLOW_SPAWNER_ENV);
    const id = await t.send('r', {});
    const [spawner] = childrenOf(first.pid!);
    await waitFor(() => childrenOf(spawner!).length > 0, 10_000, 'the spawner to fork the worker');
    first.kill('SIGTERM');
    const second = run(t, 'dist/src/queue/queue-main.js', ['r']);
    try {
      await waitFor(() => second.output().includes(`waiting for the previous process of queue r (pid ${first.pid}) to exit`), 10_000, 'the second process to wait');
      await waitFor(async () => (await t.rpc('r', 'ping', '')) !== null, 10_000, 'the second process to serve');
      // It serves only once the first is gone.
      expect(pidAlive(first.pid!)).toBe(false);
      expect(t.pidIn('queues/r/queue.pid')).toBe(second.child.pid);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
      // The worker outlives both; its pid file comes once the spawner lets go of it.
      await waitFor(() => t.pidIn(`queues/r/run/${id}/pid`) !== undefined, 10_000, 'the worker pid file');
      process.kill(-t.pidIn(`queues/r/run/${id}/pid`)!, 'SIGKILL');
    }
  });
});

describe('one rq-mgr per install root', () => {
  it('a second rq-mgr refuses to start, naming the one that runs, and leaves its queues alone', async () => {
    const t = root();
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.usePort();
    expect((await t.bin('rq-mgr', ['start'])).code).toBe(0);
    const mgr = t.pidIn('config/queuemgr.pid')!;
    const queue = t.pidIn('queues/q1/queue.pid')!;
    // As a second rq-mgr that got past bin/rq-mgr's check in a race would.
    const second = run(t, 'dist/src/supervisor/rq-mgr-main.js', []);
    expect(await exitWithin(second, 10_000)).toBe(1);
    expect(rqLog(t)).toContain(`"msg":"rq-mgr already runs for this install root (pid ${mgr}). Exiting"`);
    expect(t.pidIn('config/queuemgr.pid')).toBe(mgr);
    expect(t.pidIn('queues/q1/queue.pid')).toBe(queue);
    expect(pidAlive(queue)).toBe(true);
    // bin/rq-mgr run says so with RQ's line, and names it.
    expect(await t.bin('rq-mgr', ['run'])).toMatchObject({
      code: 1,
      stdout: 'ERROR: there is already one or more instance(s) of the program running\n',
      stderr: `queuemgr: running [pid ${mgr}]\n`,
    });
  });
});

describe('an rq-mgr of an older rq, which takes no lock', () => {
  /** A stand-in for an older rq's rq-mgr: a live process whose command line says rq-mgr, named by the pid file, holding no lock. */
  function olderMgr(t: TestRoot): ChildProcess {
    const older = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', 'rq-mgr'], { stdio: 'ignore' });
    fs.writeFileSync(path.join(t.root, 'config/queuemgr.pid'), `${older.pid}\n`);
    return older;
  }

  it('is seen by its pid file: status names it, start and a second rq-mgr refuse, stop stops it', async () => {
    const t = root();
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.usePort();
    const older = olderMgr(t);
    const gone = new Promise((r) => older.once('exit', r));
    try {
      expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 0, stdout: `queuemgr: running [pid ${older.pid}]\n` });
      expect(await t.bin('rq-mgr', ['start'])).toMatchObject({
        code: 0,
        stdout: 'ERROR: there is already one or more instance(s) of the program running\n',
        stderr: `queuemgr: running [pid ${older.pid}]\n`,
      });
      // As a second rq-mgr that got past bin/rq-mgr's check would: it refuses, and starts no queue.
      const second = run(t, 'dist/src/supervisor/rq-mgr-main.js', []);
      expect(await exitWithin(second, 10_000)).toBe(1);
      expect(rqLog(t)).toContain(`"msg":"rq-mgr already runs for this install root (pid ${older.pid}, without a lock: an older rq). Exiting"`);
      expect(fs.existsSync(path.join(t.root, 'queues/q1/queue.pid'))).toBe(false);
      expect(await t.bin('rq-mgr', ['stop'])).toMatchObject({ code: 0, stdout: expect.stringContaining(`process with pid ${older.pid} successfully stopped`) });
      await gone;
    } finally {
      older.kill('SIGKILL');
    }
  });

  it('is still seen by a user who cannot read the lock key', async () => {
    const t = root();
    const older = olderMgr(t);
    try {
      // A key that cannot be read at all (as root, a mode would not stop this test).
      fs.rmSync(path.join(t.root, 'config/lock.key'), { force: true });
      fs.mkdirSync(path.join(t.root, 'config/lock.key'));
      expect(await t.bin('rq-mgr', ['status'])).toMatchObject({ code: 0, stdout: `queuemgr: running [pid ${older.pid}]\n`, stderr: '' });
    } finally {
      older.kill('SIGKILL');
    }
  });
});

describe('a process that cannot start', () => {
  it('a queue process refused by the lock exits when its parent dies during its wait before exiting', async () => {
    const t = root();
    t.addQueue({ name: 'q', script: 'done.sh' });
    await t.start('q');
    // A parent that starts a second queue process for q as rq-mgr does (an IPC channel, its pid in RQ_PARENT_PID), prints its pid, and lives on.
    const parentCode = `
      const { fork } = require('node:child_process');
      const child = fork(process.argv[1], ['q'], { env: { ...process.env, RQ_PARENT_PID: String(process.pid) }, stdio: 'ignore' });
      console.log(child.pid);
      setInterval(() => {}, 1 << 30);`;
    const parent = spawn(process.execPath, ['-e', parentCode, path.join(REPO, 'dist/src/queue/queue-main.js')], {
      cwd: t.root,
      env: { ...process.env, RQ_ROOT: t.root, RQ_FATAL_DELAY_MS: '60000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const refused = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (c: Buffer) => resolve(c.toString()))));
    try {
      // It has been refused, and sleeps before exiting.
      await waitFor(() => t.pidIn('queues/q/queue.pid') !== refused && pidAlive(refused), 10_000, 'the second process to start');
      await new Promise((r) => setTimeout(r, 1_000));
      expect(pidAlive(refused)).toBe(true);
      parent.kill('SIGKILL');
      await waitFor(() => !pidAlive(refused), 2_000, 'the refused queue process to exit after its parent');
    } finally {
      parent.kill('SIGKILL');
      if (pidAlive(refused)) process.kill(refused, 'SIGKILL');
    }
  });

  it('a web process that cannot take its lock says why in one line and exits 1', async () => {
    const t = root();
    fs.rmSync(path.join(t.root, 'config/lock.key'), { force: true });
    fs.mkdirSync(path.join(t.root, 'config/lock.key'));
    const web = run(t, 'dist/src/web/web-main.js', []);
    expect(await exitWithin(web, 10_000)).toBe(1);
    expect(web.output()).toContain('"msg":"cannot take the lock of the web ports. Exiting"');
    expect(web.output()).toContain('EISDIR');
    expect(web.output()).not.toMatch(/^\s+at /m);
  });
});

describe('one web process on the ports', () => {
  it('waits for the previous holder of its ports to exit, says so, then listens', async () => {
    const t = root();
    // A web process left running on the root's port, as by an rq-mgr that died.
    const previous = await startLoneWeb(t);
    const mgr = run(t, 'dist/src/supervisor/rq-mgr-main.js', []);
    try {
      await waitFor(
        () => rqLog(t).includes(`waiting for the previous web process (pid ${previous.pid}) to exit before opening its ports`),
        10_000,
        'the new web process to wait',
      );
      await previous.stop();
      await waitFor(() => rqLog(t).includes(`the previous web process (pid ${previous.pid}) has exited; opening its ports`), 10_000, 'the new web process to listen');
      await waitFor(() => rqLog(t).includes('"msg":"web listening'), 10_000, 'the new web process to listen');
      expect((await previous.web.get('/css/rq.css')).status).toBe(200);
      // It waited: it never failed on a port in use, and was never restarted.
      expect(rqLog(t)).not.toContain('EADDRINUSE');
      await waitFor(async () => (await t.mgr('ping')) !== null, 10_000, 'rq-mgr to answer');
      expect(await t.mgr('restarts')).toEqual({ queues: {}, web: 0 });
    } finally {
      await previous.stop();
      mgr.child.kill('SIGTERM');
      await mgr.exited;
    }
  });
});
