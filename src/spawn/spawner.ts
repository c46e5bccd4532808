/**
 * The queue process's side of its spawners: small helper processes (spawner-main.ts) that
 * fork the queue's scripts, so the queue process itself never forks.
 *
 * Why: Node 20 forks with plain fork(), which copies the forking process's page tables
 * and leaves every page copy-on-write, so each later write to a page faults. A queue
 * process holding a big index paid that on its main thread for every run, and more the
 * bigger the queue. The spawner stays small and does nothing else, so forks are cheap and
 * run beside the queue's own work.
 *
 * Spawners are started as runs need them, up to the pool size, and exit after a time
 * without runs. Each spawn request gets its own number; the spawner answers `started`
 * (the pid, after writing the pid file) or `failed`, then relays the worker's status-pipe
 * lines and finally its exit, after the pipe has drained (runner.ts). A spawner that
 * cannot be started fails its runs as a script that cannot be started would. If a
 * spawner's channel closes with runs under way, their workers' pipes are gone: each run
 * is reported lost, and the queue treats it as after a restart. After close() (the queue
 * process is exiting) nothing is reported: the next start's recovery sees the pid files.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { coerceError } from '../domain/errors.js';
import { QUEUE_NODE_FLAGS } from '../lib/install-root.js';
import type { Logger } from '../lib/logger.js';
import { PARENT_PID_VAR } from '../lib/parent-link.js';
import { killGroup, type RunningWorker, type SpawnSpec } from './runner.js';

/** What the spawner needs to start one worker: runner.ts's SpawnSpec without its callbacks. */
export type SpawnRequest = Omit<SpawnSpec, 'onLine' | 'onExit'> & {
  /** Written (atomically) with the worker's pid as soon as it is known. */
  pidFile: string;
};

export type ToSpawner = ({ t: 'spawn'; n: number } & SpawnRequest) | { t: 'reply'; n: number; line: string };

export type FromSpawner =
  | { t: 'started'; n: number; pid: number }
  | { t: 'failed'; n: number; error: string; code?: string | undefined }
  | { t: 'lines'; n: number; lines: string[] }
  /** `ranMs`: from the spawn to the exit, as the spawner timed it. */
  | { t: 'exit'; n: number; code: number | null; signal: NodeJS.Signals | null; ranMs: number };

export interface WorkerEvents {
  onStart(worker: RunningWorker): void;
  /** The OS refused to start the script (e.g. ENOEXEC, or ENOSPC for a full disk: its errno `code`), or a spawner; nothing runs. */
  onFail(error: string, code?: string): void;
  onLine(line: string): void;
  /** Once, after the worker has exited and its status pipe has drained. */
  onExit(code: number | null, signal: NodeJS.Signals | null, ranMs: number): void;
  /** The spawner went away first: no more lines or exit will come for this worker. */
  onLost(): void;
}

const SPAWNER_MAIN = fileURLToPath(new URL('./spawner-main.js', import.meta.url));

/** One spawner process and the runs it has under way. */
interface Helper {
  child: ChildProcess;
  runs: Map<number, WorkerEvents>;
  /** Spawn requests not yet answered: the helper is blocked in fork/exec for these. */
  starting: number;
  /** Set while the helper has no runs: it exits when this fires. */
  idle?: NodeJS.Timeout | undefined;
}

export class Spawner {
  private readonly helpers: Helper[] = [];
  private readonly queue: string;
  private readonly log: Logger;
  private poolSize = 1;
  private seq = 0;
  private closed = false;
  private readonly idleMs: number;

  /** A spawner with no runs for `idleMs` exits, so an idle queue holds no helpers. */
  constructor(queue: string, log: Logger, idleMs: number) {
    this.queue = queue;
    this.log = log;
    this.idleMs = idleMs;
  }

  /**
   * How many spawner processes to use at most. A spawner is blocked from fork until the
   * child has exec'd, so concurrent runs start faster from several; the queue passes
   * `num_workers`, capped by the cores. Spawners are started as they are needed.
   */
  setPoolSize(n: number): void {
    this.poolSize = Math.max(1, Math.min(n, os.availableParallelism()));
  }

  /**
   * Start a worker. After close() nothing is started: the queue process is exiting, and
   * its next start moves the message back to que (it has no pid file).
   */
  spawn(request: SpawnRequest, events: WorkerEvents): void {
    if (this.closed) return;
    let helper = this.helpers.reduce<Helper | undefined>((best, h) => (best && best.starting <= h.starting ? best : h), undefined);
    if (!helper || (helper.starting > 0 && this.helpers.length < this.poolSize)) {
      const started = this.start();
      if (typeof started === 'string') {
        this.log.error({ err: started }, 'cannot start a spawner');
        setImmediate(() => events.onFail(`cannot start a spawner: ${started}`));
        return;
      }
      helper = started;
    }
    const n = ++this.seq;
    clearTimeout(helper.idle);
    helper.idle = undefined;
    helper.runs.set(n, events);
    helper.starting++;
    this.send(helper, { t: 'spawn', n, ...request });
  }

  /**
   * Close every spawner's channel and wait (at most `timeoutMs`) for them to exit, so
   * the queue process reaps them before it exits itself. Their workers live on.
   */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    const exits = this.helpers.map(({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.connected) child.disconnect();
      return gone;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.all(exits), timeout]);
    clearTimeout(timer);
  }

  private send(helper: Helper, message: ToSpawner): void {
    // A closed channel (or one never made) is reported once, by 'disconnect' or 'error',
    // for every run under way.
    if (!helper.child.connected) return;
    helper.child.send(message, (e) => {
      if (e) this.log.warn({ err: e.message }, 'cannot reach the spawner');
    });
  }

  /** A new spawner, or why fork() refused at once. */
  private start(): Helper | string {
    let child: ChildProcess;
    try {
      child = fork(SPAWNER_MAIN, [this.queue], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: [...QUEUE_NODE_FLAGS],
        env: { ...process.env, [PARENT_PID_VAR]: String(process.pid) },
      });
    } catch (e) {
      return coerceError(e).message;
    }
    const helper: Helper = { child, runs: new Map(), starting: 0 };
    this.helpers.push(helper);
    child.on('message', (m: FromSpawner) => this.receive(helper, m));
    /** No more messages can come: the channel has closed, or the spawner never started. */
    const gone = (failure?: string): void => {
      const at = this.helpers.indexOf(helper);
      if (at < 0) return;
      this.helpers.splice(at, 1);
      clearTimeout(helper.idle);
      const runs = [...helper.runs.values()];
      helper.runs.clear();
      // Closing: a run may have started after all; recovery finds it by its pid file.
      if (this.closed || runs.length === 0) return;
      if (failure !== undefined) {
        for (const events of runs) events.onFail(`cannot start a spawner: ${failure}`);
        return;
      }
      this.log.error({ spawner_pid: child.pid, runs: runs.length }, 'a spawner went away with runs under way');
      for (const events of runs) events.onLost();
    };
    child.on('disconnect', () => gone());
    child.on('error', (e) => {
      this.log.error({ err: e.message }, 'spawner error');
      if (child.pid === undefined) gone(e.message);
    });
    return helper;
  }

  private receive(helper: Helper, m: FromSpawner): void {
    const events = helper.runs.get(m.n);
    if (!events) return;
    switch (m.t) {
      case 'started':
        helper.starting--;
        events.onStart({
          pid: m.pid,
          reply: (line) => this.send(helper, { t: 'reply', n: m.n, line }),
          kill: (signal) => killGroup(m.pid, signal),
        });
        return;
      case 'failed':
        helper.starting--;
        this.ended(helper, m.n);
        events.onFail(m.error, m.code);
        return;
      case 'lines':
        for (const line of m.lines) events.onLine(line);
        return;
      case 'exit':
        this.ended(helper, m.n);
        events.onExit(m.code, m.signal, m.ranMs);
        return;
    }
  }

  /** A run is over; a helper left with none is retired once it has been idle for idleMs. */
  private ended(helper: Helper, n: number): void {
    helper.runs.delete(n);
    if (helper.runs.size > 0) return;
    helper.idle = setTimeout(() => {
      const at = this.helpers.indexOf(helper);
      if (at < 0 || helper.runs.size > 0) return;
      this.helpers.splice(at, 1);
      if (helper.child.connected) helper.child.disconnect();
    }, this.idleMs).unref();
  }
}
