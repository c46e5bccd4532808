/**
 * The state of one queue process, one object that every part of the process shares: what
 * it was given (layout, store, committer, log, spawner...), its config, its memory of the
 * messages, and the bookkeeping of dispatch and of the pull model. The queue process is the
 * only writer of its queue's directories, so this memory is the truth about them between
 * two moves; a move renames first and memory follows once the move is durable.
 *
 * In memory: `prep` (ids), `que` (a QueList ordered by due time, then id), the coalesced
 * duplicates held aside by running messages (`held`), `run` (each entry with its worker or
 * its lease), and `err` (sorted ids). `done` and `relayed` are counted incrementally, never
 * recounted on a request.
 *
 * This module holds data and the few reads every part needs; the parts that change the
 * state are the modules beside it (dispatch.ts, finish-run.ts, timers.ts, waiters.ts,
 * the commands). `nudge` is the one signal between them: messages may have become ready.
 */
import type { HostInfo } from '../domain/ids.js';
import { fullId } from '../domain/ids.js';
import type { Message } from '../domain/message.js';
import type { QueueConfig } from '../domain/queue-config.js';
import type { State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { RunOutcome } from '../spawn/outcome.js';
import type { Completion } from '../spawn/pipe-protocol.js';
import type { RunningWorker } from '../spawn/runner.js';
import type { Spawner } from '../spawn/spawner.js';
import type { ExtIdIndex } from '../store/ext-ids.js';
import type { GroupCommitter } from '../store/group-commit.js';
import type { QueueLayout, RootLayout } from '../store/layout.js';
import type { JobStatus, MessageStore } from '../store/message-store.js';
import type { QueEntry } from '../store/que-index.js';
import type { HousekeepingState } from './clean-report.js';
import type { CronSchedule } from './cron.js';
import type { FinishedRecords } from './finished-records.js';
import type { MessageLocks } from './message-locks.js';
import type { AdminStatus, ArgOf, PullResult, PulledView, QueueCommand, QueueStatus, ReplyOf } from '../rpc/queue-api.js';
import type { QueList } from './que-list.js';
import type { QueueStats } from './queue-stats.js';
import type { SortedIds } from './sorted-ids.js';
import type { Timetable } from './timetable.js';

export type { AdminStatus } from '../rpc/queue-api.js';
export type OperStatus = 'UP' | 'SCRIPTERROR';

/** Calls a queue's command, typed by the map: this queue in-process, any other over its socket (its reply, refusals included). */
export type QueueCaller = <K extends QueueCommand>(queue: string, command: K, arg: ArgOf<K>) => Promise<ReplyOf<K>>;

/** A message in `run`: a script's run (with its worker) or an external worker's lease. */
export interface RunEntry {
  id: string;
  msg: Message;
  /** Its params as its que index entry holds them (big ones as digests), for the blocking key; made once. */
  params?: readonly unknown[];
  worker?: RunningWorker;
  /** The spawner has been asked to start the worker and has not answered yet. */
  starting?: boolean;
  /** destroy_message came while starting: TERM the worker as soon as it has a pid. */
  destroyOnStart?: boolean;
  /** Waiting for a runnable script (SCRIPTERROR); counted once as a spawn failure. */
  waitsForScript?: boolean;
  /** A worker from before a restart, still alive; we wait for it to exit. */
  orphan?: { pid: number; pidFileMs: number };
  first?: Completion;
  /** The worker has exited (or never started) and the move out of `run` is being committed. */
  finishing: boolean;
  /** Its held duplicates already moved to its final state (`dups` of its msg), when a full disk interrupted the finish. */
  movedDups?: string[];
  /** The last status line, and whether any line came (no line: the status file is left alone). */
  jobStatus: JobStatus;
  hasStatus?: boolean;
  /** A status write is scheduled (they are throttled, see reports.ts). */
  statusTimer?: NodeJS.Timeout | undefined;
  timers: NodeJS.Timeout[];
  timedOutAfterSec?: number;
  /** When its worker was asked for (epoch ms), and how it ended (exit code as text, or signal): for its finished record. */
  startedAt?: number;
  exit?: string;
}

/** Who leases, and for how long: `ttrMs`, else the message's own `ttr_ms`, else `defaultTtrMs`, else no end. */
export interface Lessee {
  owner: string;
  ttrMs: number | undefined;
  defaultTtrMs: number | undefined;
}

/** A blocking lease waiting for a ready message (waiters.ts). */
export interface Waiter {
  who: Lessee;
  token: string | undefined;
  /** Out of the list, timer stopped, answered: true the first time, false after (already answered). */
  settle: (jobs: PulledView[]) => boolean;
  /** The wait's time limit. */
  timer: NodeJS.Timeout | undefined;
  /** The client closed its connection. */
  gone: boolean;
}

/** The bookkeeping of the scheduler and of the runs (dispatch.ts, finish-run.ts). */
export interface DispatchState {
  dueTimer: NodeJS.Timeout | undefined;
  dueTimerAt: number;
  /** Since when (epoch ms) the disk has been full, as far as this queue's writes know. */
  noSpaceSince: number | undefined;
  /** Armed while the disk is full: no run starts until it fires (finish-run.ts noteNoSpace). */
  spaceTimer: NodeJS.Timeout | undefined;
  /** Finished runs whose move a full disk refused, with their outcomes, to be tried again. */
  readonly unfinished: Map<RunEntry, RunOutcome>;
  tick: NodeJS.Timeout | undefined;
  /** The queue process is exiting, and no run is started any more. */
  stopped: boolean;
  /** A checkpoint of the journal is under way (que-memory.ts). */
  checkpointing: boolean;
  /** The environment every worker starts from (process env + env_vars), built at the first run of each config. */
  baseEnv: NodeJS.ProcessEnv | undefined;
  /** The script's real path and when it was last found runnable. */
  script: { real: string; checkedAt: number } | undefined;
}

/** The memory of the pull model (external workers' leases): timers, waiters, dead letters, external ids. */
export interface PullState {
  /** External ids unique in this queue, and across the server (`ext_scope` server). */
  readonly queueIds: ExtIdIndex;
  readonly serverIds: ExtIdIndex;
  /** Blocking leases, first come first served. */
  readonly waiters: Waiter[];
  /** Dead letters, oldest first (a Map keeps insertion order; they die in time order): id → dead_at. */
  readonly dead: Map<string, number>;
  /** When each lease ends (TTR). */
  readonly leaseEnds: Timetable;
  /** When each waiting or leased message expires (TTL). */
  readonly expiries: Timetable;
  /** Waiter names cancelled lately, until when they are remembered. */
  readonly cancelled: Map<string, number>;
  trashTimer: NodeJS.Timeout | undefined;
  /** Waiting `result_wait` calls, by message. */
  readonly resultWaiters: Map<string, Set<(r: PullResult) => void>>;
  /** Messages whose create (with an external id claimed) has not committed yet: settled when it has or failed. */
  readonly creating: Map<string, Promise<void>>;
}

export interface QueueState {
  readonly name: string;
  readonly root: RootLayout;
  readonly layout: QueueLayout;
  readonly host: HostInfo;
  readonly store: MessageStore;
  readonly committer: GroupCommitter;
  readonly log: Logger;
  readonly callQueue: QueueCaller;
  /** Forks the queue's scripts (spawner.ts). */
  readonly spawner: Spawner;
  /** The que index is compacted once its journal holds more lines than this (and than 4 per waiting message). */
  readonly indexCompactLines: number;
  /** When this process started (epoch ms). */
  readonly startedAt: number;
  config: QueueConfig;

  prep: string[];
  readonly que: QueList;
  /** Coalesced duplicates, by the id of the running message that holds them. */
  readonly held: Map<string, QueEntry[]>;
  readonly heldIds: Set<string>;
  readonly run: Map<string, RunEntry>;
  readonly errIds: SortedIds;
  counts: { done: number; relayed: number };
  /** What the queue page lists of finished messages, from memory (finished-records.ts). */
  readonly finished: FinishedRecords;
  /**
   * One lock per message (message-locks.ts): a move renames before its group commit's
   * directory fsync ends, and memory follows only then. A command that changes one
   * message takes its lock, and a lookup waits until it is free, so none sees it
   * half-moved.
   */
  readonly locks: MessageLocks;
  /** Counters since this process started (the `stats` command). */
  readonly stats: QueueStats;
  admin: AdminStatus;
  oper: OperStatus;

  readonly dispatch: DispatchState;
  readonly pull: PullState;
  /** The queue's cron schedule (cron.ts); its `describe()` is the `stats` schedule. */
  readonly cron: CronSchedule;
  /** The clean under way and the disk usage of `stats` (housekeeping.ts). */
  readonly housekeeping: HousekeepingState;
  /**
   * Messages may have become ready (a commit, a requeue, a worker's exit, a due timer, a
   * flag change): start scripts and serve waiting leases (queue-engine.ts sets it).
   */
  readonly nudge: () => void;
  /** The `stats` of every queue this process serves (the `host_stats` command; served-queue.ts). */
  readonly hostStats: (queues?: readonly string[]) => Record<string, QueueStatus>;
}

export const nowSec = (): number => Math.floor(Date.now() / 1000);

/** A message's full id (its URL) in this queue. */
export function fullIdOf(s: QueueState, shortId: string): string {
  return fullId(s.host, s.name, shortId);
}

/** A pull queue: no script, so external workers lease its messages and nothing is forked. */
export function isPull(s: QueueState): boolean {
  return s.config.script === '';
}

/** The queue's status: SCRIPTERROR over the admin flag. */
export function statusOf(s: QueueState): AdminStatus | OperStatus {
  return s.oper !== 'UP' ? s.oper : s.admin;
}

/** May messages be handed out now? */
export function isUp(s: QueueState): boolean {
  return statusOf(s) === 'UP';
}

/** How many messages are in each state (the `num_messages` reply). */
export function numMessages(s: QueueState): Record<State, number> {
  return {
    prep: s.prep.length,
    que: s.que.size,
    run: s.run.size,
    done: s.counts.done,
    relayed: s.counts.relayed,
    err: s.errIds.size,
  };
}
