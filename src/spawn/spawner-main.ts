/**
 * Entry point of a queue's spawner: `node dist/src/spawn/spawner-main.js <queue>`, forked
 * by its queue process (spawner.ts) with an IPC channel and nothing else to do. It starts
 * each worker with runner.ts, writes the worker's pid file, and relays the worker's start,
 * status-pipe lines (batched) and exit to the queue process; the queue's answers to `dup` come back
 * the same way and go to the worker's fd 4.
 *
 * A worker whose pid file cannot be written for a full disk is killed at once and its
 * spawn reported failed (runner.ts: a run whose start cannot be written down does not run).
 *
 * When the channel closes (the queue process has exited or died) the spawner exits too,
 * even if that happened while it was still starting (parent-link.ts).
 * Its workers are never signalled: they run in their own process groups and outlive it,
 * and the queue's recovery waits for them as after any restart (docs/faults.md).
 */
import fs from 'node:fs';
import { coerceError, errnoCode, isNoSpace } from '../domain/errors.js';
import { followParent } from '../lib/parent-link.js';
import { spawnWorker, type SpawnedWorker } from './runner.js';
import type { FromSpawner, ToSpawner } from './spawner.js';

if (!followParent(() => process.exit(0))) process.exit(0);
process.title = `[rq-spawn] [${process.argv[2] ?? ''}]`;

const workers = new Map<number, SpawnedWorker>();

/** Send to the queue process; `sent` is called once the message is handed to the channel. */
function send(message: FromSpawner, sent?: () => void): void {
  // The channel may already be closing; its 'disconnect' (followParent) ends the process then.
  if (process.connected) process.send?.(message, (e: Error | null) => void (e ? undefined : sent?.()));
}

function start(m: Extract<ToSpawner, { t: 'spawn' }>): void {
  // Lines go out in one message per turn of the loop, not one each: a worker flooding
  // its pipe costs a message per pipe read. While a message is on its way, the worker's
  // pipe is not read: a queue process slower than the worker holds the worker back,
  // instead of its lines piling up here.
  let lines: string[] = [];
  const flush = (): void => {
    if (lines.length === 0) return;
    const batch = lines;
    lines = [];
    if (!process.connected) return;
    worker.holdLines(true);
    send({ t: 'lines', n: m.n, lines: batch }, () => worker.holdLines(false));
  };
  let worker: SpawnedWorker;
  const spawned = performance.now();
  try {
    worker = spawnWorker({
      argv: m.argv,
      cwd: m.cwd,
      env: m.env,
      logFile: m.logFile,
      realScript: m.realScript,
      onLine: (line) => {
        if (lines.push(line) === 1) setImmediate(flush);
      },
      onExit: (code, signal) => {
        workers.delete(m.n);
        flush();
        send({ t: 'exit', n: m.n, code, signal, ranMs: performance.now() - spawned });
      },
    });
  } catch (e) {
    send({ t: 'failed', n: m.n, error: coerceError(e).message, code: errnoCode(e) });
    return;
  }
  workers.set(m.n, worker);
  try {
    fs.writeFileSync(`${m.pidFile}.tmp`, String(worker.pid));
    fs.renameSync(`${m.pidFile}.tmp`, m.pidFile);
  } catch (e) {
    if (isNoSpace(e)) {
      worker.kill('SIGKILL');
      send({ t: 'failed', n: m.n, error: coerceError(e).message, code: errnoCode(e) });
      return;
    }
    // The run's directory went away under it (removed by hand, or its queue deleted); the
    // run is still reported, and ends as its worker does.
  }
  send({ t: 'started', n: m.n, pid: worker.pid });
}

process.on('message', (m: ToSpawner) => {
  if (m.t === 'spawn') start(m);
  else workers.get(m.n)?.reply(m.line);
});
// SIGHUP re-reads the queue's config in the queue process; here there is nothing to re-read.
process.on('SIGHUP', () => {});
