/**
 * One queue served by a process: what a queue process of its own (queue-main.ts) holds
 * once, and a host process (host-main.ts) holds for each of its queues. It owns the
 * queue's lock (process-lock.ts: one writer per queue, wherever it is served), its pid
 * file (the serving process's pid), its socket `queues/<q>/queue.sock` (RQ's framing,
 * rpc/server.ts), and, while the queue is loaded, its state (state.ts), its `que/` hints
 * and its spawners.
 *
 * Load on demand: a queue that is not resident is held unloaded (its lock, its socket and
 * its config; no memory of its messages) until a command needs it. `ping`, `status`,
 * `stats`, `host_stats` and `history` are answered unloaded (its history written out when
 * it was put away), with the counts kept when it was put
 * away (or counted once); any other command loads it first, which is a start-up like any
 * other (store/recover.ts). A loaded queue that has been idle (queue-engine.ts isIdle) for
 * `unloadAfterMs` is put away again. Which queues are loaded as soon as they are opened,
 * and never put away: mustLoad.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type net from 'node:net';
import { RqError, asNoSpace, coerceError, errnoCode } from '../domain/errors.js';
import type { HostInfo } from '../domain/ids.js';
import { isValidQueueName } from '../domain/names.js';
import { parseQueueConfig, type QueueConfig } from '../domain/queue-config.js';
import type { State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import { holderName, takeLock, type ProcessLock } from '../lib/process-lock.js';
import type { QueueClient } from '../client/queue-client.js';
import type { DiskUsage, QueueStatus } from '../rpc/queue-api.js';
import { createRpcServer, listenOwnerOnly, type RpcConnection } from '../rpc/server.js';
import { Spawner } from '../spawn/spawner.js';
import { createGroupCommitter } from '../store/group-commit.js';
import { countFlat, countHashed } from '../store/hashed-tree.js';
import { ensureQueueDirs, queueLayout, type QueueLayout, type RootLayout } from '../store/layout.js';
import { createMessageStore } from '../store/message-store.js';
import { statsOf } from './commands/stats.js';
import { historyReply } from './commands/history.js';
import { QueueHistory } from './history.js';
import { watchQue, type Watch } from './hints.js';
import { noticeQueName } from './que-memory.js';
import { closeQueue, createQueue, isIdle, reloadConfig, startQueue, stopQueue } from './queue-engine.js';
import { checkpoint } from './que-memory.js';
import { QueueStats } from './queue-stats.js';
import { COMMANDS } from './commands/index.js';
import { checkedArg, runCommand, runOwnCommand } from './run-command.js';
import { refreshFlags, readAdminFlags } from './flags.js';
import { numMessages, type QueueState } from './state.js';

/** How long a queue that stops being served here waits for its commits under way before it lets go of its lock. */
const COMMITS_WAIT_MS = 10_000;

/** What every queue of a process shares. */
export interface ServeOptions {
  root: RootLayout;
  host: HostInfo;
  /** Reaches the other queues (their processes may be restarting: the client waits). */
  others: QueueClient;
  spawnerIdleMs: number;
  indexCompactLines: number;
  /** A queue idle this long is put away; Infinity: loaded when opened, never put away. */
  unloadAfterMs: number;
  /** The `shutdown` command: what it does is the process's to say. */
  onShutdown: () => void;
  /** The `stats` of the queues of the process (`host_stats`), all or those named; by default, this queue's alone. */
  hostStats?: (queues?: readonly string[]) => Record<string, QueueStatus>;
}

/**
 * What a queue keeps while it is not loaded: its counters since it was opened, its counts
 * (from memory when it was put away, else counted once: nothing else writes its
 * directories while this process holds its lock), its last disk usage.
 */
interface Kept {
  stats: QueueStats;
  counts: Record<State, number> | undefined;
  usage: DiskUsage | null;
}

/** Why a queue could not be opened: the reason, for the log. */
export interface Refusal {
  refused: string;
}

/**
 * Open queue `name` for serving: its lock (waiting for a holder that is exiting), its pid
 * file, its config, its state directories (made if missing), its socket; loaded at once
 * when mustLoad says so, or when the process keeps it resident.
 */
export async function openQueue(name: string, log: Logger, o: ServeOptions): Promise<ServedQueue | Refusal> {
  if (!isValidQueueName(name)) return { refused: `invalid queue name [${String(name)}]` };
  const layout = queueLayout(o.root, name);
  if (!fs.existsSync(layout.dir)) return { refused: `no queue directory ${layout.dir}` };
  let taken;
  try {
    taken = await takeLock(o.root, `queue ${name}`, {
      waitWhile: (holder) => holder.exiting,
      onWait: (holder) => log.warn({ holder: holder.pid }, `waiting for the previous process of queue ${name} (${holderName(holder)}) to exit`),
    });
  } catch (e) {
    return { refused: `cannot take the lock of queue ${name}: ${coerceError(e).message}` };
  }
  if ('holder' in taken) return { refused: `queue ${name} is already served by ${holderName(taken.holder)}` };
  const lock = taken.lock;
  const refuse = (why: string): Refusal => {
    lock.release();
    return { refused: why };
  };
  let config: QueueConfig;
  try {
    // Written off the main thread: a host opening thousands of queues at once writes them in
    // parallel. Renamed into place, so a reader never finds it empty (the lock makes the
    // temporary name this process's alone).
    await fsp.writeFile(`${layout.pidFile}.tmp`, `${process.pid}\n`);
    await fsp.rename(`${layout.pidFile}.tmp`, layout.pidFile);
    config = parseQueueConfig(fs.readFileSync(layout.configFile, 'utf8'), layout.configFile);
  } catch (e) {
    return refuse(`Invalid queue config for ${name}: ${coerceError(e).message}`);
  }
  const q = new ServedQueue(layout, config, lock, log, o);
  try {
    ensureQueueDirs(layout);
    if (o.unloadAfterMs === Infinity || mustLoad(layout, config)) q.load();
  } catch (e) {
    return refuse(`cannot open queue ${name}: ${coerceError(e).message}`);
  }
  const listening = await q.listen();
  if (listening === undefined) return q;
  await q.stop(0, true);
  return { refused: listening };
}

/**
 * Must the queue be loaded as soon as it is opened, and kept loaded? A queue with a script
 * (a built-in queue on a host) always is: its messages are to be run, and one dropped into
 * `que/` by hand is seen through its watch. So is one with a cron schedule. A pull queue
 * is loaded at once only with leased messages in `run/` (their leases end on their own);
 * its waiting messages wait for a worker's command, which loads it (expiring any whose
 * time-to-live ran out meanwhile). Messages are directories, so a state directory holds one
 * exactly when its link count is over 2: one stat, whatever its size. A count of 1 (ext4
 * past 65,000 subdirectories, or a filesystem that does not count them) says "maybe".
 */
function mustLoad(layout: QueueLayout, config: QueueConfig): boolean {
  if (config.script !== '' || config.schedule.length > 0) return true;
  try {
    return fs.statSync(layout.stateDir('run')).nlink !== 2;
  } catch (e) {
    return errnoCode(e) !== 'ENOENT';
  }
}

export class ServedQueue {
  readonly name: string;
  readonly layout: QueueLayout;
  private config: QueueConfig;
  private readonly lock: ProcessLock;
  private readonly log: Logger;
  private readonly o: ServeOptions;
  private readonly server: net.Server;
  private readonly openedAt = Date.now();
  private state: QueueState | undefined;
  /** Settles once the loaded state is whole (queue-engine.ts startQueue's second part). */
  private recovered: Promise<void> = Promise.resolve();
  private hints: Watch | undefined;
  private spawner: Spawner | undefined;
  private kept: Kept;
  /** Commands under way. */
  private busy = 0;
  /** Since when the loaded queue has been seen idle (undefined: it was not, at the last look). */
  private idleSince: number | undefined;

  constructor(layout: QueueLayout, config: QueueConfig, lock: ProcessLock, log: Logger, o: ServeOptions) {
    this.name = layout.name;
    this.layout = layout;
    this.config = config;
    this.lock = lock;
    this.log = log;
    this.o = o;
    this.kept = { stats: new QueueStats(new QueueHistory(layout.dir, log)), counts: undefined, usage: null };
    this.server = createRpcServer((command, argument, conn) => this.handle(command, argument, conn));
  }

  /** Listen on the queue's socket; undefined once it listens, else why not. */
  listen(): Promise<string | undefined> {
    fs.rmSync(this.layout.socket, { force: true });
    return new Promise((resolve) => {
      this.server.once('error', (e) => resolve(`cannot serve ${this.layout.socket}: ${e.message}`));
      listenOwnerOnly(this.server, this.layout.socket, () => resolve(undefined));
    });
  }

  /** The queue's state, loaded (recovered from its directories) if it was put away. */
  load(): QueueState {
    if (this.state) return this.state;
    const { layout, o, log } = this;
    ensureQueueDirs(layout);
    const committer = createGroupCommitter();
    this.spawner = new Spawner(this.name, log, o.spawnerIdleMs);
    const s: QueueState = createQueue(
      {
        root: o.root,
        layout,
        host: o.host,
        store: createMessageStore(layout, committer),
        committer,
        log,
        callQueue: (target, command, arg) => (target === this.name ? runOwnCommand(s, command, arg) : o.others.send(target, command, arg)),
        spawner: this.spawner,
        indexCompactLines: o.indexCompactLines,
        stats: this.kept.stats,
        startedAt: this.openedAt,
        hostStats: (queues) => this.hostStats(queues),
      },
      this.config,
    );
    s.housekeeping.usage = this.kept.usage;
    // Watching before recovery lists que/ leaves no gap for an entry to slip through.
    const queDir = layout.stateDir('que');
    this.hints = watchQue(
      queDir,
      {
        queNames: (names) => {
          for (const id of names) noticeQueName(s, id);
        },
        queOverflow: () => {
          for (const id of fs.readdirSync(queDir)) noticeQueName(s, id);
        },
      },
      log,
    );
    this.recovered = startQueue(s);
    this.state = s;
    this.idleSince = undefined;
    return s;
  }

  /** Put the queue away if it has been idle long enough (called every second or so by its host). */
  putAwayIfIdle(now: number): void {
    const s = this.state;
    if (!s) return;
    // A queue with a script stays loaded (mustLoad); isIdle covers the schedule and run/.
    if (this.busy > 0 || s.config.script !== '' || !isIdle(s)) {
      this.idleSince = undefined;
      return;
    }
    this.idleSince ??= now;
    if (now - this.idleSince < this.o.unloadAfterMs) return;
    this.kept = { stats: s.stats, counts: numMessages(s), usage: s.housekeeping.usage };
    s.stats.history?.flush();
    closeQueue(s);
    this.hints?.close();
    void this.spawner?.close(0);
    this.state = this.hints = this.spawner = undefined;
  }

  /** A flag file of this queue appeared or vanished. */
  flagsChanged(): void {
    if (this.state) refreshFlags(this.state);
  }

  /** SIGHUP: read config.json again (a bad one keeps the old config, and says why). */
  reload(): void {
    if (this.state) {
      reloadConfig(this.state);
      this.config = this.state.config;
      return;
    }
    try {
      this.config = parseQueueConfig(fs.readFileSync(this.layout.configFile, 'utf8'), this.layout.configFile);
      if (this.config.schedule.length > 0) this.load();
    } catch (e) {
      this.log.error({ err: coerceError(e).message }, 'config reload failed; keeping the old config');
    }
  }

  /**
   * Stop serving: no new run and no new request (closing the server removes the socket);
   * resolves once the requests under way are answered and the spawners are gone, waiting at
   * most `timeoutMs` for either. `release` lets go of the lock (the process lives on);
   * otherwise it is marked exiting, and goes with the process.
   */
  async stop(timeoutMs: number, release: boolean): Promise<void> {
    if (release) this.hints?.close();
    else this.lock.markExiting();
    if (this.state) stopQueue(this.state);
    this.kept.stats.history?.flush();
    const answered = new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      setTimeout(resolve, timeoutMs).unref();
    });
    await Promise.all([this.spawner?.close(timeoutMs), answered]);
    const s = this.state;
    if (!release) {
      // A clean exit leaves a journal with nothing to replay (if the checkpoint ends in time).
      if (s && s.committer.appended().lines > 0) await checkpoint(s);
      s?.store.close();
      return;
    }
    if (s) {
      // Let the commits under way end before the lock goes: the next holder must be the only writer.
      for (const until = Date.now() + COMMITS_WAIT_MS; !(s.committer.idle() && s.locks.idle()) && Date.now() < until; ) await sleep(10);
      if (!s.committer.idle()) this.log.error(`commits still under way after ${COMMITS_WAIT_MS / 1000} s; closing anyway`);
      closeQueue(s);
    }
    this.state = undefined;
    this.lock.release();
  }

  private async handle(command: string, argument: string, conn: RpcConnection): Promise<string> {
    if (command === 'shutdown') {
      setImmediate(this.o.onShutdown);
      return '["ok"]';
    }
    const cold = this.state ? undefined : this.coldReply(command, argument);
    if (cold !== undefined) return JSON.stringify(cold);
    let s: QueueState;
    try {
      s = this.load();
    } catch (e) {
      const err = asNoSpace(e, path.relative(this.o.root.root, this.layout.dir));
      this.log.error({ err: coerceError(e).message }, 'cannot load the queue');
      return JSON.stringify(err instanceof RqError ? ['fail', err.message, err.code] : ['fail', `cannot load queue ${this.name}: ${coerceError(e).message}`, 'RQ_IO']);
    }
    this.busy++;
    try {
      await this.recovered;
      const reply = await runCommand(s, command, argument, conn);
      return Array.isArray(reply) && reply.length === 1 && reply[0] === 'ERROR' ? '[ "ERROR" ]' : JSON.stringify(reply);
    } finally {
      this.busy--;
    }
  }

  /** The reply of a put-away queue to `ping`, `status` and `stats`; undefined for the commands that load it. */
  private coldReply(command: string, argument: string): unknown {
    switch (command) {
      case 'ping':
        return ['pong'];
      case 'status':
        return [readAdminFlags(this.layout)];
      case 'stats':
        return this.coldStats();
      case 'history': {
        const arg = checkedArg(COMMANDS.history, argument);
        return Array.isArray(arg) ? arg : historyReply(this.kept.stats, arg);
      }
      case 'host_stats': {
        const arg = checkedArg(COMMANDS.host_stats, argument);
        return Array.isArray(arg) ? arg : this.hostStats(arg.queues);
      }
      default:
        return undefined;
    }
  }

  /** Its `stats` now, loaded or put away. */
  statsNow(): QueueStatus {
    return this.state ? statsOf(this.state) : this.coldStats();
  }

  private hostStats(queues?: readonly string[]): Record<string, QueueStatus> {
    return this.o.hostStats?.(queues) ?? (queues && !queues.includes(this.name) ? {} : { [this.name]: this.statsNow() });
  }

  private coldStats(): QueueStatus {
    const dir = (state: State): string => this.layout.stateDir(state);
    const counts = (this.kept.counts ??= {
      prep: countFlat(dir('prep')),
      que: countFlat(dir('que')),
      run: countFlat(dir('run')),
      done: countHashed(dir('done')),
      relayed: countHashed(dir('relayed')),
      err: countFlat(dir('err')),
    });
    const admin = readAdminFlags(this.layout);
    return {
      pid: process.pid,
      status: admin,
      admin,
      uptime: Math.floor((Date.now() - this.openedAt) / 1000),
      counts: { ...counts },
      schedule: [],
      ...this.kept.stats.snapshot(),
      totals: this.kept.stats.totals(),
      cleaner: this.config.cleaner,
      disk: this.kept.usage,
    };
  }
}
