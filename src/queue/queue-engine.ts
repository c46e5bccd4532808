/**
 * The queue engine: builds one queue's state (state.ts) and runs its life, in the queue
 * process that is the only writer of the queue's directories. Start-up recovers the
 * directories (store/recover.ts) into memory, then dispatches; a 1 s tick re-reads the
 * admin flags, watches workers left from before a restart, retries a script that was
 * not runnable, and compacts the que index; SIGHUP re-reads the config.
 *
 * The parts: commands/ (one file per RPC command, the table in commands/index.ts, run by
 * run-command.ts), dispatch.ts and finish-run.ts (scripts: pump → spawn → exit → move),
 * reports.ts (a script's status pipe), lookup.ts, listings.ts and list-rows.ts (reads),
 * finished-records.ts (what memory keeps of finished messages, for the lists), timers.ts and
 * waiters.ts (due timer, TTR, TTL, blocking leases and result waits), pull-messages.ts
 * (the pull model's shared moves), que-memory.ts (que and its index), cron.ts and
 * housekeeping.ts.
 */
import fs from 'node:fs';
import { coerceError } from '../domain/errors.js';
import type { HostInfo } from '../domain/ids.js';
import { parseQueueConfig, type QueueConfig } from '../domain/queue-config.js';
import type { Logger } from '../lib/logger.js';
import type { QueueStatus } from '../rpc/queue-api.js';
import type { Spawner } from '../spawn/spawner.js';
import { extIdIndex } from '../store/ext-ids.js';
import type { GroupCommitter } from '../store/group-commit.js';
import type { QueueLayout, RootLayout } from '../store/layout.js';
import type { MessageStore } from '../store/message-store.js';
import { recoverQueue } from '../store/recover.js';
import { commitMessage, createMessage } from './create.js';
import { CronSchedule } from './cron.js';
import { FinishedRecords, recordingStore } from './finished-records.js';
import { checkOrphans, liveOrphan, pump } from './dispatch.js';
import { refreshFlags } from './flags.js';
import { MessageLocks } from './message-locks.js';
import { checkpoint, checkpointIfLong, journal } from './que-memory.js';
import { THIS_BOOT, bootLine } from '../store/journal.js';
import { QueList } from './que-list.js';
import type { QueueStats } from './queue-stats.js';
import { SortedIds } from './sorted-ids.js';
import { statusOf, type QueueCaller, type QueueState } from './state.js';
import { Timetable } from './timetable.js';
import { adoptLease, endLeaseLater, expire, loadPullTimers } from './timers.js';
import { wake } from './waiters.js';

/** Admin flags are re-read at least this often (RQ: every 5 s). */
const TICK_MS = 1_000;

/** What the queue process gives its queue. */
export interface QueueDeps {
  root: RootLayout;
  layout: QueueLayout;
  host: HostInfo;
  store: MessageStore;
  committer: GroupCommitter;
  log: Logger;
  callQueue: QueueCaller;
  spawner: Spawner;
  indexCompactLines: number;
  /** Counters since the queue was opened: kept while it is put away (served-queue.ts). */
  stats: QueueStats;
  /** When the queue was opened (epoch ms). */
  startedAt: number;
  hostStats: (queues?: readonly string[]) => Record<string, QueueStatus>;
}

/** The state of a queue, before start-up recovery. */
export function createQueue(deps: QueueDeps, config: QueueConfig): QueueState {
  const name = deps.layout.name;
  const finished = new FinishedRecords(deps.layout.dir);
  // The parts below reach the state through `s` once it is made.
  const s: QueueState = {
    ...deps,
    store: recordingStore(deps.store, finished, (id) => s.run.get(id), (id) => s.que.get(id)),
    finished,
    name,
    config,
    prep: [],
    que: new QueList(),
    held: new Map(),
    heldIds: new Set(),
    run: new Map(),
    errIds: new SortedIds(),
    counts: { done: 0, relayed: 0 },
    locks: new MessageLocks(() => wake(s)),
    admin: 'UP',
    oper: 'UP',
    dispatch: {
      dueTimer: undefined,
      dueTimerAt: Infinity,
      noSpaceSince: undefined,
      spaceTimer: undefined,
      unfinished: new Map(),
      tick: undefined,
      stopped: false,
      checkpointing: false,
      baseEnv: undefined,
      script: undefined,
    },
    pull: {
      queueIds: extIdIndex(deps.layout.idsDir),
      serverIds: extIdIndex(deps.layout.root.serverIdsDir),
      waiters: [],
      dead: new Map(),
      leaseEnds: new Timetable((id) => endLeaseLater(s, id)),
      expiries: new Timetable((id, at) => expire(s, id, at)),
      cancelled: new Map(),
      trashTimer: undefined,
      resultWaiters: new Map(),
      creating: new Map(),
    },
    cron: new CronSchedule({
      queue: name,
      file: deps.layout.cronFile,
      log: deps.log,
      isUp: () => statusOf(s) === 'UP',
      prep: async (input) => {
        const id = await createMessage(s, input, 'prep');
        return id.slice(id.lastIndexOf('/') + 1);
      },
      commit: (id) => commitMessage(s, id),
    }),
    housekeeping: { running: undefined, usage: null, measuring: false, stale: false, usageStartedMs: -Infinity },
    nudge: () => {
      pump(s);
      wake(s);
    },
  };
  applyConfig(s);
  return s;
}

/** Derived state of the config: coalescing index, worker environment, script check, schedule. */
function applyConfig(s: QueueState): void {
  s.que.setCoalesceParams(s.config.coalesce_params);
  s.dispatch.baseEnv = undefined;
  s.spawner.setPoolSize(s.config.num_workers);
  s.dispatch.script = undefined;
  s.cron.configure(s.config.schedule);
}

/**
 * Start-up: recovery (store/recover.ts) into memory, then the first dispatch. Leased
 * messages keep their leases (timers.ts), runs whose worker from before the restart is
 * still alive wait for it; err and the counts of the final states are read in the next
 * turn, and the promise settles once they are (commands wait for it: served-queue.ts).
 */
export function startQueue(s: QueueState): Promise<void> {
  const { store, layout } = s;
  const found = recoverQueue(store, layout, s.log, (id) => liveOrphan(s, id));
  s.prep = found.prep;
  for (const { id, msg, lease } of found.leased) adoptLease(s, id, msg, lease);
  for (const { id, msg, worker } of found.orphans) s.run.set(id, { id, msg, orphan: worker, finishing: false, jobStatus: null, timers: [] });
  s.que.load(found.que);
  s.committer.openJournal(layout.indexFile, found.indexLines);
  // This boot's line: a journal written in this boot alone lived through no power cut (journal.ts).
  if (THIS_BOOT !== undefined && !found.boots.has(THIS_BOOT)) void journal(s, bootLine(THIS_BOOT));
  refreshFlags(s);
  pump(s);
  // A journal that is not exactly the waiting messages, or that replay acted on, is cut by a checkpoint.
  if (found.staleIndex) void checkpoint(s);
  s.dispatch.tick = setInterval(() => onTick(s), TICK_MS);
  s.dispatch.tick.unref();
  void s.cron.start();
  // Off the critical path (the first runs start first): err, the dead letters and the
  // counts of the final states, in the next turn. The promise settles once they are in.
  return new Promise((resolve) =>
    setImmediate(() => {
      const errs = store.listFlat('err');
      s.errIds.addAll(errs);
      loadPullTimers(s, found.que, errs);
      s.counts = { done: store.countHashed('done'), relayed: store.countHashed('relayed') };
      s.finished.load((state, id) => (state === 'err' ? s.errIds.has(id) : store.exists(state, id)));
      resolve();
    }),
  );
}

/** The queue process is exiting: start no more runs (those under way live on). */
export function stopQueue(s: QueueState): void {
  s.dispatch.stopped = true;
}

/**
 * Nothing to do and nothing under way: no message waiting, running or leased, no cron
 * schedule, no wait, no commit, no clean, no timer. Such a queue may be put away
 * (closeQueue) and loaded again on its next command.
 */
export function isIdle(s: QueueState): boolean {
  const { dispatch: d, pull: p } = s;
  return (
    s.prep.length === 0 &&
    s.que.size === 0 &&
    s.run.size === 0 &&
    s.held.size === 0 &&
    s.config.schedule.length === 0 &&
    p.waiters.length === 0 &&
    p.resultWaiters.size === 0 &&
    p.creating.size === 0 &&
    p.trashTimer === undefined &&
    d.unfinished.size === 0 &&
    d.spaceTimer === undefined &&
    !d.checkpointing &&
    s.housekeeping.running === undefined &&
    !s.housekeeping.measuring &&
    s.locks.idle() &&
    s.committer.idle()
  );
}

/**
 * Close a queue's state for good (put away when idle, or no longer served by this
 * process): every timer stopped, so nothing it holds acts again; blocking leases answered
 * empty; its journal and directories closed. Its commits must have ended (the committer
 * idle): a flush under way would write to a closed journal.
 */
export function closeQueue(s: QueueState): void {
  const { dispatch: d, pull: p } = s;
  stopQueue(s);
  clearInterval(d.tick);
  for (const timer of [d.dueTimer, d.spaceTimer, p.trashTimer]) clearTimeout(timer);
  p.leaseEnds.clear();
  p.expiries.clear();
  s.cron.stop();
  for (const w of [...p.waiters]) w.settle([]);
  for (const run of s.run.values()) {
    clearTimeout(run.statusTimer);
    for (const timer of run.timers) clearTimeout(timer);
  }
  s.committer.close();
  s.store.close();
  s.finished.close();
}

/** SIGHUP: re-read config.json. A bad file keeps the old config and says why. */
export function reloadConfig(s: QueueState): void {
  try {
    const text = fs.readFileSync(s.layout.configFile, 'utf8');
    s.config = parseQueueConfig(text, s.layout.configFile);
    applyConfig(s);
    s.log.info({ config: s.config }, 'config reloaded');
  } catch (e) {
    s.log.error({ err: coerceError(e).message }, 'config reload failed; keeping the old config');
  }
  pump(s);
}

function onTick(s: QueueState): void {
  refreshFlags(s);
  checkOrphans(s);
  pump(s);
  checkpointIfLong(s);
  s.stats.history?.tick(s.que.size);
}
