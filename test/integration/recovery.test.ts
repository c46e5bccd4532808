/**
 * Crash recovery (docs/layout.md): kill -9 of the queue process at any moment loses
 * nothing; run/ goes back to que/ with count unchanged; a worker from before the restart
 * that is still alive is waited for, not started twice; the que index survives, also
 * when it is compacted while commits are in flight; a spawner lost mid-run is handled
 * like a restart; and a message dropped into que/ by hand is picked up.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { SLOW_SPAWNER_ENV, TestRoot, childrenOf, parentPid, pidAlive, waitFor, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

/** The pid of a run's worker, once its spawner has written the pid file. */
async function runPid(queue: string, id: string): Promise<number> {
  const file = path.join(t.queueDir(queue), 'run', id, 'pid');
  await waitFor(() => fs.existsSync(file), 10_000, `the pid file of ${id}`);
  return Number(fs.readFileSync(file, 'utf8'));
}

describe('recovery', () => {
  it('every acknowledged message survives kill -9 during a burst of creates and runs', async () => {
    t.addQueue({ name: 'r', script: 'done.sh', num_workers: 2 });
    await t.start('r');
    const ids: string[] = [];
    const senders = Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 40; i++) {
        try {
          ids.push(await t.send('r', { param1: String(i) }));
        } catch {
          return; // the queue process died mid-request: that message was never acknowledged
        }
      }
    });
    await waitFor(() => ids.length >= 100, 10_000, '100 acknowledged creates');
    await t.kill9('r');
    await Promise.all(senders);
    await t.start('r');
    for (const id of ids) await t.waitState('r', id, 'done', 20_000);
    // Creates the kill cut off before their reply may have committed: those messages run
    // too, and may still be running (or waiting for their worker from before the kill).
    await waitFor(() => fs.readdirSync(path.join(t.queueDir('r'), 'run')).length === 0, 20_000, 'run/ to empty');
  });

  it('moves run/ back to que/ with count unchanged when the worker is gone', async () => {
    t.addQueue({ name: 'r', script: 'sleep.sh', num_workers: 2 });
    await t.start('r');
    const a = await t.send('r', { param2: '30' });
    const b = await t.send('r', { param2: '30' });
    const pids = [await runPid('r', a), await runPid('r', b)];
    fs.writeFileSync(path.join(t.root, 'config/r.pause'), '');
    await t.kill9('r');
    for (const pid of pids) process.kill(-pid, 'SIGKILL');
    await waitFor(() => pids.every((p) => !pidAlive(p)));
    await t.start('r');
    expect(fs.readdirSync(path.join(t.queueDir('r'), 'run'))).toEqual([]);
    expect(await t.rpc('r', 'num_messages', {})).toMatchObject({ run: 0, que: 2 });
    expect(await t.message('r', a)).toMatchObject({ count: 0, state: 'que' });
  });

  it('does not start a message again while its worker from before the restart lives', async () => {
    t.addQueue({ name: 'r', script: 'wait-go.sh' });
    await t.start('r');
    const id = await t.send('r', {});
    const pid = await runPid('r', id);
    await t.kill9('r');
    expect(pidAlive(pid)).toBe(true);
    await t.start('r');
    expect(await t.state('r', id)).toBe('run');
    expect(await runPid('r', id)).toBe(pid);
    // The orphan's report is lost with the old process; once it exits the message runs again
    // (and finds `go` at once: job/ goes along with the message).
    fs.writeFileSync(path.join(t.queueDir('r'), 'run', id, 'job', 'go'), '');
    await waitFor(() => !pidAlive(pid), 10_000, 'the old worker to exit');
    expect(await t.waitState('r', id, 'done')).toBe('done - went');
    const log = fs.readFileSync(path.join(t.root, (await t.message('r', id))['path'] as string, 'job/stdio.log'), 'utf8');
    expect(log.match(/RQ START/g)).toHaveLength(2);
  });

  it('a spawner killed mid-run: the queue process carries on, waits for the worker, then runs the message again', async () => {
    t.addQueue({ name: 'r', script: 'wait-go.sh' });
    const queue = await t.start('r');
    const id = await t.send('r', {});
    const pid = await runPid('r', id);
    const spawner = parentPid(pid);
    expect(spawner).not.toBe(queue.pid);
    process.kill(spawner, 'SIGKILL');
    await waitFor(() => !pidAlive(spawner), 5000, 'the spawner to die');
    expect(pidAlive(pid)).toBe(true);
    expect(await t.state('r', id)).toBe('run');
    // Its status pipe went with the spawner: the report is lost, and the run starts again
    // once the worker has exited (finding `go` at once).
    fs.writeFileSync(path.join(t.queueDir('r'), 'run', id, 'job', 'go'), '');
    await waitFor(() => !pidAlive(pid), 10_000, 'the worker to exit');
    expect(await t.waitState('r', id, 'done')).toBe('done - went');
    expect(queue.exitCode).toBeNull();
    const log = fs.readFileSync(path.join(t.root, (await t.message('r', id))['path'] as string, 'job/stdio.log'), 'utf8');
    expect(log.match(/RQ START/g)).toHaveLength(2);
  });

  for (const how of ['stopped', 'killed'] as const) {
    it(`a queue process ${how} takes its spawner along and leaves the worker running`, async () => {
      t.addQueue({ name: 'r', script: 'wait-go.sh' });
      const queue = await t.start('r');
      const id = await t.send('r', {});
      const pid = await runPid('r', id);
      const spawner = parentPid(pid);
      // Its first report read: a report written once the spawner is gone would end it (SIGPIPE).
      await waitFor(async () => (await t.statusOf('r', id)) === 'run - waiting for go', 10_000, 'the first report');
      if (how === 'killed') {
        await t.kill9('r');
      } else {
        const gone = new Promise((r) => queue.once('exit', r));
        queue.kill('SIGTERM');
        await gone;
      }
      await waitFor(() => !pidAlive(spawner), 5000, 'the spawner to exit');
      expect(pidAlive(pid)).toBe(true);
      process.kill(-pid, 'SIGKILL');
    });
  }

  it('a queue process stopped while a run is starting: the run is started once', async () => {
    // A script that reports nothing until `go`: its status pipe's reader (the spawner) is
    // gone by the time it runs, and a line written there would end it (SIGPIPE).
    fs.writeFileSync(path.join(t.root, 'quiet-wait.sh'), '#!/bin/sh\nfor _ in $(seq 600); do [ -e go ] && break; sleep 0.1; done\necho "done went" >&3\n', { mode: 0o755 });
    t.addQueue({ name: 'r', script: './quiet-wait.sh' });
    // The spawner holds each spawn for 1.5 s after the fork (the script waits for its start
    // line until then), so the queue process stops while its first run is still starting.
    const queue = await t.start('r', SLOW_SPAWNER_ENV);
    const id = await t.send('r', {});
    expect(fs.existsSync(path.join(t.queueDir('r'), 'run', id, 'pid'))).toBe(false);
    const [spawner] = childrenOf(queue.pid!);
    expect(spawner).toBeDefined();
    await waitFor(() => childrenOf(spawner!).length > 0, 10_000, 'the spawner to fork the worker');
    expect(fs.existsSync(path.join(t.queueDir('r'), 'run', id, 'pid'))).toBe(false);
    const gone = new Promise((r) => queue.once('exit', r));
    queue.kill('SIGTERM');
    await gone;
    // The stopping queue leaves the run where it is; the spawner writes the worker's pid
    // file and exits; the next start waits for that worker instead of starting another.
    await waitFor(() => !pidAlive(spawner!), 10_000, 'the spawner to exit');
    const pid = await runPid('r', id);
    await t.start('r');
    expect(pidAlive(pid)).toBe(true);
    expect(await t.state('r', id)).toBe('run');
    expect(await runPid('r', id)).toBe(pid);
    const log = fs.readFileSync(path.join(t.queueDir('r'), 'run', id, 'job/stdio.log'), 'utf8');
    expect(log.match(/RQ START/g)).toHaveLength(1);
    process.kill(-pid, 'SIGKILL');
  });

  it('a stopping queue process takes no new request while it waits for its spawner', async () => {
    t.addQueue({ name: 'r', script: 'wait-go.sh' });
    // The spawner is held 1.5 s in its first spawn, so the stopping queue waits its full second for it.
    const queue = await t.start('r', SLOW_SPAWNER_ENV);
    const id = await t.send('r', {});
    const [spawner] = childrenOf(queue.pid!);
    await waitFor(() => childrenOf(spawner!).length > 0, 10_000, 'the spawner to fork the worker');
    const socket = path.join(t.queueDir('r'), 'queue.sock');
    const gone = new Promise((r) => queue.once('exit', r));
    queue.kill('SIGTERM');
    // The socket goes at once, while the process still waits: a client is refused rather
    // than told ok by a process about to exit.
    await waitFor(() => !fs.existsSync(socket), 5_000, 'the socket to be removed');
    expect(pidAlive(queue.pid!)).toBe(true);
    expect(await t.rpc('r', 'create_message', { dest: 'r' })).toBeNull();
    await gone;
    expect(fs.readdirSync(path.join(t.queueDir('r'), 'que'))).toEqual([]);
    const pid = await runPid('r', id);
    process.kill(-pid, 'SIGKILL');
  });

  it('a reused pid is not mistaken for the old worker', async () => {
    t.addQueue({ name: 'r', script: 'sleep.sh' });
    await t.start('r');
    const id = await t.send('r', { param2: '30' });
    const pid = await runPid('r', id);
    fs.writeFileSync(path.join(t.root, 'config/r.pause'), '');
    await t.kill9('r');
    process.kill(-pid, 'SIGKILL');
    await waitFor(() => !pidAlive(pid));
    // Point the pid file at a live process that is not the worker (init, started at boot).
    fs.writeFileSync(path.join(t.queueDir('r'), 'run', id, 'pid'), '1');
    await t.start('r');
    expect(await t.state('r', id)).toBe('que');
  });

  it('a run that resent before the crash keeps its new due time, not its stale index entry', async () => {
    t.addQueue({ name: 'r', script: './resend-hang.sh' });
    fs.writeFileSync(path.join(t.root, 'resend-hang.sh'), '#!/bin/sh\necho "resend 3600-later" >&3\nexec sleep 1000\n', { mode: 0o755 });
    await t.start('r');
    const id = await t.send('r', {});
    await waitFor(async () => ((await t.message('r', id))['count'] as number) === 1, 5000, 'the resend to be saved');
    const pid = await runPid('r', id);
    await t.kill9('r');
    process.kill(-pid, 'SIGKILL');
    await waitFor(() => !pidAlive(pid));
    await t.start('r');
    const [entry] = (await t.rpc('r', 'messages', { state: 'que' })) as Array<{ msg_id: string; due: number }>;
    expect(entry!.msg_id).toBe(id);
    expect(entry!.due).toBeGreaterThan(Date.now() / 1000 + 3500);
    expect(await t.state('r', id)).toBe('que');
  });

  it('recovers a long que from its index, with due times kept', async () => {
    t.addQueue({ name: 'r', script: 'done.sh', num_workers: 0 });
    await t.start('r');
    const due = Math.floor(Date.now() / 1000) + 1000;
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await t.send('r', { due: due + i, param1: String(i) }));
    await t.rpc('r', 'run_message', { msg_id: ids[49] });
    const before = await t.rpc('r', 'messages', { state: 'que' });
    await t.kill9('r');
    await t.start('r');
    expect(await t.rpc('r', 'messages', { state: 'que' })).toEqual(before);
    expect((before as Array<{ msg_id: string }>)[0]!.msg_id).toBe(ids[49]);
  });

  it('keeps every due time when the index is compacted while commits are in flight', async () => {
    t.addQueue({ name: 'r', script: 'done.sh', num_workers: 0 });
    // A tick compacts the index once its journal holds more than 4 lines per waiting message.
    const start = (): Promise<unknown> => t.start('r', { RQ_INDEX_COMPACT_LINES: '0' });
    await start();
    const index = path.join(t.queueDir('r'), 'que.index');
    const due = Math.floor(Date.now() / 1000) + 3600;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await t.send('r', { due: due + i }));
    // Three rounds: creates, and many more run_message (a new due, appended to the journal),
    // in parallel until the index is compacted under that load; then kill -9 and restart.
    for (let round = 0; round < 3; round++) {
      let busy = true;
      const load = Array.from({ length: 8 }, async (_, lane) => {
        for (let i = 0; busy; i++) {
          if (i % 10 === 0) ids.push(await t.send('r', { due: due + 100 + lane }));
          else expect(await t.rpc('r', 'run_message', { msg_id: ids[(lane * 7 + i) % ids.length] })).toEqual(['ok', 'msg sent to front of run queue']);
        }
      });
      // Between compactions the journal only grows: a smaller file is a compacted one.
      let size = fs.statSync(index).size;
      try {
        await waitFor(
          () => {
            const grown = size;
            size = fs.statSync(index).size;
            return size < grown;
          },
          30_000,
          'a compaction under load',
        );
      } finally {
        busy = false;
        await Promise.all(load);
      }
      const before = (await t.rpc('r', 'messages', { state: 'que' })) as Array<{ msg_id: string; due: number }>;
      await t.kill9('r');
      await start();
      // The restarted queue lists its que from the index: every message, with the due its msg has.
      const after = (await t.rpc('r', 'messages', { state: 'que' })) as Array<{ msg_id: string; due: number }>;
      expect(after).toEqual(before);
      expect(after.map((m) => m.msg_id).sort()).toEqual([...ids].sort());
      for (const { msg_id, due: listed } of after) expect((await t.message('r', msg_id))['due']).toBe(listed);
    }
  });

  it('picks up a message directory an operator drops into que/ by hand', async () => {
    t.addQueue({ name: 'r', script: 'done.sh' });
    await t.start('r');
    const id = '20261121.0101.01.001.42';
    const staging = path.join(t.root, 'staging');
    fs.mkdirSync(staging);
    fs.writeFileSync(path.join(staging, 'msg'), JSON.stringify({ msg_id: id, dest: 'r', count: 0, max_count: 15 }));
    fs.renameSync(staging, path.join(t.queueDir('r'), 'que', id));
    expect(await t.waitState('r', id, 'done')).toBe('done - all good');
  });

  it('SIGHUP reloads config.json before later requests, and keeps the old config when the file is bad', async () => {
    t.addQueue({ name: 'r', script: 'done.sh', num_workers: 1 });
    const child = await t.start('r');
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const workers = async (): Promise<number> => ((await t.rpc('r', 'config', '')) as [string, { num_workers: number }])[1].num_workers;
    const cfg = path.join(t.queueDir('r'), 'config.json');
    fs.writeFileSync(cfg, JSON.stringify({ ...JSON.parse(fs.readFileSync(cfg, 'utf8')), num_workers: '4' }));
    child.kill('SIGHUP');
    await waitFor(async () => (await workers()) === 4, 10_000, 'the new config');
    fs.writeFileSync(cfg, '{broken');
    child.kill('SIGHUP');
    await waitFor(() => out.includes('config reload failed'), 10_000, 'the failed reload to be logged');
    expect(await workers()).toBe(4);
  });
});
