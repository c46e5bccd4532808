/**
 * The queue engine: one queue's state machine, scheduler and workers, in the queue
 * process that is the only writer of the queue's directories.
 *
 * In memory it holds `prep` (ids), `que` (a QueList ordered by due time, then id), the
 * coalesced duplicates held aside by running messages, and `run` (each entry with its
 * worker). `done`, `relayed` and `err` are counted incrementally, never recounted on a
 * request. Every verb here is the single implementation of that transition; the RPC
 * table (commands.ts) only parses and renders.
 *
 * Dispatch happens straight from the event that frees a slot or makes a message ready:
 * a commit, a worker's exit, a due timer, or a flag change. A 1 s tick re-reads the
 * admin flags, watches workers left from before a restart, and retries a script that
 * was not runnable (SCRIPTERROR).
 *
 * A full disk stops nothing for good. A run that cannot start for it goes back to que as
 * it was (count unchanged), a finished run whose move out of run it refuses keeps its
 * outcome in memory, and while the disk is full no run is started; every second the
 * finishes and the starts are tried again, until they work.
 *
 * Reads for the web go through the same memory: `messages` pages (offset, limit) are
 * slices of the in-memory lists, and `search` checks what memory knows before it reads
 * any file. Counters since start-up (`stats`) live in QueueStats.
 *
 * The que index (que-index.ts) is appended to by every commit into `que` and compacted
 * from memory, through the group committer, which swaps the file only between flushes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isOk } from '../client/rpc.js';
import { RqError, asNoSpace, coerceError, errnoCode, isNoSpace } from '../domain/errors.js';
import { fullId, hostUrl, isSafeId, isShortId, parseFullId, type HostInfo } from '../domain/ids.js';
import { PARAM_KEYS, buildMessage, fieldText, type Message, type MessageInput } from '../domain/message.js';
import { isValidQueueName } from '../domain/names.js';
import { parseQueueConfig, type QueueConfig } from '../domain/queue-config.js';
import { TRANSITIONS, type State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import { checkAttachmentSource } from '../store/attachment-source.js';
import { attachmentNames, hashFile } from '../store/attachments.js';
import type { GroupCommitter } from '../store/group-commit.js';
import type { QueueLayout, RootLayout } from '../store/layout.js';
import type { Allocated, MessageStore, JobStatus } from '../store/message-store.js';
import { BigParam, entryFromMessage, journalLine, readIndex, writeIndex, type QueEntry } from '../store/que-index.js';
import { decideOutcome, type RunOutcome } from '../spawn/outcome.js';
import { isCompletion, parseLine, type Completion, type WorkerReport } from '../spawn/pipe-protocol.js';
import {
  commandArgv,
  isRunnable,
  isSameWorker,
  killGroup,
  resolveScript,
  type RunningWorker,
} from '../spawn/runner.js';
import type { Spawner } from '../spawn/spawner.js';
import { CronSchedule } from './cron.js';
import { Housekeeping } from './housekeeping.js';
import { MessageLocks } from './message-locks.js';
import { PullDesk } from './pull.js';
import { QueList, paramKey } from './que-list.js';
import { QueueStats } from './queue-stats.js';
import { SortedIds } from './sorted-ids.js';
import { RQ_VERSION } from '../domain/version.js';


export type AdminStatus = 'UP' | 'PAUSE' | 'DOWN';
export type OperStatus = 'UP' | 'SCRIPTERROR';

/** Linux's limit on one `NAME=value` string of a new process's environment (MAX_ARG_STRLEN). */
const MAX_ENV_VAR_BYTES = 128 * 1024;
/** Grace between TERM and KILL when a run hits the queue's `timeout`. */
const KILL_GRACE_MS = 5_000;
/** Admin flags are re-read at least this often (spec/rq.md §2.4: every 5 s). */
const TICK_MS = 1_000;
/**
 * A running message's `status` file is rewritten at most this often; the last line of a
 * run is always written, durably, with the move out of `run`.
 */
const STATUS_WRITE_MS = 50;
/** While the disk is full, the runs it held back are tried again this often (see noteNoSpace). */
const NO_SPACE_RETRY_MS = 1_000;
/** How long a successful check of the script (real path, executable) is trusted. */
const SCRIPT_CHECK_MS = 1_000;
/** A search lets other events in after this many file reads. */
const SEARCH_READS_PER_TURN = 256;
/** The order in which `search` visits the states: RQ's (spec/rq.md §7.3). */
const SEARCH_ORDER: readonly State[] = ['prep', 'que', 'run', 'err', 'done', 'relayed'];
/** The fields of a read view where `search` looks for its free text. */
const TEXT_FIELDS: readonly string[] = ['msg_id', ...PARAM_KEYS, 'status'];

interface RunEntry {
  id: string;
  msg: Message;
  /** Its params as its que index entry holds them (big ones as digests), for the blocking key; made once. */
  params?: readonly unknown[];
  worker?: RunningWorker;
  /** The spawner has been asked to start the worker and has not answered yet. */
  starting?: boolean;
  /** destroy_message came while starting: TERM the worker as soon as it has a pid. */
  destroyOnStart?: boolean;
  /** When the worker was spawned (epoch ms), for the run-duration histogram. */
  spawnedAt?: number;
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
  /** A status write is scheduled (they are throttled to one per STATUS_WRITE_MS). */
  statusTimer?: NodeJS.Timeout | undefined;
  timers: NodeJS.Timeout[];
  timedOutAfterSec?: number;
}

/** Calls a queue's command by name: this queue in-process, any other over its socket. */
export type QueueCaller = (queue: string, command: string, arg: Record<string, unknown>) => Promise<unknown>;

export interface EngineDeps {
  root: RootLayout;
  layout: QueueLayout;
  host: HostInfo;
  store: MessageStore;
  committer: GroupCommitter;
  log: Logger;
  callQueue: QueueCaller;
  /** Forks the queue's scripts (spawner.ts). */
  spawner: Spawner;
  /** The que index is compacted once its journal holds more lines than this (and than 4 per waiting message). */
  indexCompactLines: number;
}

export interface MessageView extends Message {
  path: string;
  state: State;
  status: string;
  _attachments?: Record<string, { md5: string; size: number; path: string }>;
}

export interface SearchQuery {
  /** Field of the read view → text; a message matches when every pair does. */
  query: Readonly<Record<string, string>>;
  /** Pairs are matched exactly, not as substrings (the free text is always a substring). */
  exact: boolean;
  /** Free text: a substring of the id, of a param (see fieldMatches) or of the status text. */
  text?: string;
  states: readonly State[];
  /** Matches to skip, then at most `limit` returned. */
  offset: number;
  limit: number;
}

export interface SearchResult {
  messages: MessageView[];
  /** Messages looked at, from memory or from their files. */
  scanned: number;
  /** The scan stopped at `limit` before looking at every message: more may match. */
  truncated: boolean;
}

/** One message of a state's listing, with what memory holds of it. */
interface Listed {
  id: string;
  /** Its que index entry (que, and the duplicates held aside). */
  entry?: QueEntry;
  /** Its run entry, which holds the whole message. */
  run?: RunEntry;
}

/** A field of a read view that a que index entry does not hold. */
const NOT_IN_ENTRY = Symbol('not in the index entry');

/** A field of a message's read view from its que index entry: `dest`, `due`, the params but big ones. */
function entryField(entry: QueEntry, field: string): unknown {
  if (field === 'dest') return entry.dest;
  if (field === 'due') return entry.due;
  const param = (PARAM_KEYS as readonly string[]).indexOf(field);
  const value = param >= 0 ? entry.params[param] : NOT_IN_ENTRY;
  return value instanceof BigParam ? NOT_IN_ENTRY : value;
}

/**
 * RQ's search match (spec/rq.md §7.3). Exact: equal to the text (Ruby's `==`, so a
 * number or null never equals it). Otherwise: present and not null, and containing the
 * text. RQ answered 500 for a substring query on a non-string field; here a non-string
 * is matched on its JSON text (`"due": 1795238778` contains `"1795"`).
 */
function fieldMatches(value: unknown, text: string, exact: boolean): boolean {
  if (exact) return value === text;
  if (value === undefined || value === null) return false;
  return (typeof value === 'string' ? value : JSON.stringify(value)).includes(text);
}

const nowSec = (): number => Math.floor(Date.now() / 1000);

/** Hard-link a file, or copy it when the link crosses filesystems (EXDEV). */
function linkOrCopy(from: string, to: string): void {
  try {
    fs.linkSync(from, to);
  } catch (e) {
    if (errnoCode(e) !== 'EXDEV' && errnoCode(e) !== 'EPERM') throw e;
    fs.copyFileSync(from, to);
  }
}

export class QueueEngine {
  readonly name: string;
  config: QueueConfig;
  private readonly d: EngineDeps;
  private readonly startedAt = Date.now();
  private prep: string[] = [];
  private readonly que = new QueList();
  /** Coalesced duplicates, by the id of the running message that holds them. */
  private readonly held = new Map<string, QueEntry[]>();
  private readonly heldIds = new Set<string>();
  private readonly run = new Map<string, RunEntry>();
  private readonly errIds = new SortedIds();
  /**
   * One lock per message (message-locks.ts): a move (a commit prep → que, a finishing run
   * with the duplicates it holds, a pull command) renames before its group commit's
   * directory fsync ends, and memory follows only then. A command that changes one
   * message takes its lock, and a lookup waits until it is free, so none sees it
   * half-moved.
   */
  private readonly locks = new MessageLocks(() => this.pull.wake());
  /** Counters since this process started (the `stats` RPC). */
  readonly stats = new QueueStats();
  private counts = { done: 0, relayed: 0 };
  private admin: AdminStatus = 'UP';
  private oper: OperStatus = 'UP';
  private dueTimer: NodeJS.Timeout | undefined;
  private dueTimerAt = Infinity;
  /** Since when (epoch ms) the disk has been full, as far as this queue's writes know. */
  private noSpaceSince: number | undefined;
  /** Armed while the disk is full: no run starts until it fires (see noteNoSpace). */
  private spaceTimer: NodeJS.Timeout | undefined;
  /** Finished runs whose move a full disk refused, with their outcomes, to be tried again. */
  private readonly unfinished = new Map<RunEntry, RunOutcome>();
  private tick: NodeJS.Timeout | undefined;
  /** stop() was called: the queue process is exiting, and no run is started any more. */
  private stopped = false;
  /** A compaction of the que index is waiting for its turn in the committer. */
  private compacting = false;
  /** The environment every worker starts from (process env + env_vars), built per config. */
  private baseEnv: NodeJS.ProcessEnv = {};
  private script: { real: string; checkedAt: number } | undefined;
  /** The queue's cron schedule (cron.ts); its `describe()` is the `stats` schedule. */
  readonly cron: CronSchedule;
  /** The `clean` command and the disk usage of `stats` (housekeeping.ts). */
  readonly housekeeping: Housekeeping;
  /** External workers' leases and the other pull commands (pull.ts). */
  readonly pull: PullDesk;

  constructor(deps: EngineDeps, config: QueueConfig) {
    this.d = deps;
    this.name = deps.layout.name;
    this.config = config;
    this.cron = new CronSchedule({
      queue: this.name,
      file: deps.layout.cronFile,
      log: deps.log,
      isUp: () => this.status() === 'UP',
      prep: async (input) => {
        const id = await this.create(input, 'prep');
        return id.slice(id.lastIndexOf('/') + 1);
      },
      commit: (id) => this.commit(id),
    });
    this.housekeeping = new Housekeeping({
      store: deps.store,
      layout: deps.layout,
      log: deps.log,
      count: (state) => (state === 'err' ? this.errIds.size : this.counts[state]),
      forget: (state, id) => {
        if (state !== 'err') return this.counts[state]--;
        this.pull.forgetDead(id);
        return this.errIds.delete(id);
      },
      // A run leaves `run` (finishRun's finally) only after its final state counts it.
      isFinishing: (id) => this.run.has(id),
      keepsOwnTtl: (state, id) => this.isPull() && this.pull.keepsOwnTtl(state, id),
      isDown: () => {
        this.refreshFlags();
        return this.admin === 'DOWN';
      },
    });
    this.pull = new PullDesk({
      name: this.name,
      store: deps.store,
      layout: deps.layout,
      log: deps.log,
      que: this.que,
      isPull: () => this.isPull(),
      isUp: () => this.status() === 'UP',
      locks: this.locks,
      stateOf: (id) => this.stateOf(id),
      runs: {
        add: (id, msg, status) => void this.run.set(id, { id, msg, finishing: false, jobStatus: status, hasStatus: true, timers: [] }),
        get: (id) => this.run.get(id),
        delete: (id) => void this.run.delete(id),
        leased: () => {
          let n = 0;
          for (const r of this.run.values()) if (r.msg.lease) n++;
          return n;
        },
      },
      queued: (entry) => this.queued(entry),
      counted: (event, id) => {
        if ('from' in event) {
          if (event.from === 'err') this.errIds.delete(id);
          else this.counts.done--;
        } else if (event.to === 'err') {
          this.errIds.add(id);
          this.stats.messageFinished('err');
        } else {
          this.counts.done++;
          this.stats.messageFinished('done');
        }
      },
      create: async (input, extra, files, marker, allocated) => {
        const { msg, entry } = await this.d.store.create(
          (id) => {
            const m = buildMessage(input, id, this.fullId(id), nowSec());
            extra(m);
            return m;
          },
          'que',
          { files, ...(marker ? { marker } : {}), ...(allocated ? { allocated } : {}) },
        );
        this.stats.messageCreated();
        this.queued(entry!);
        return msg;
      },
    });
    this.applyConfig();
  }

  /** A pull queue: no script, so external workers lease its messages (pull.ts) and nothing is forked. */
  isPull(): boolean {
    return this.config.script === '';
  }

  /** Derived state of the config: coalescing index, worker environment, script check. */
  private applyConfig(): void {
    this.que.setCoalesceParams(this.config.coalesce_params);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['RUBYOPT'];
    delete env['UV_THREADPOOL_SIZE'];
    for (const [k, v] of Object.entries(this.config.env_vars)) if (!k.startsWith('RQ_')) env[k] = v;
    this.baseEnv = env;
    this.d.spawner.setPoolSize(this.config.num_workers);
    this.script = undefined;
    this.cron.configure(this.config.schedule);
  }

  // ───────────────────────────── lifecycle ─────────────────────────────

  /**
   * Start-up recovery (spec/rq.md §2.12), then the first dispatch. `run/` messages go
   * back to `que/` with `count` unchanged, except those whose worker from before the
   * restart is still alive (checked by pid and process start time): they stay in
   * `run` until that worker exits.
   */
  start(): void {
    const { store, layout } = this.d;
    this.prep = store.sweepPrep().sort().reverse();
    // Ids moved back from run/: their index entries predate the run (a resend changes due).
    const fromRun = new Set<string>();
    for (const id of store.listFlat('run')) {
      let leased: Message | undefined;
      try {
        leased = store.readMsg('run', id);
      } catch {
        leased = undefined;
      }
      if (leased?.lease) {
        // An external worker's lease outlives the process; pull.ts ends it at its TTR.
        this.pull.adopt(id, leased, leased.lease);
        continue;
      }
      const orphan = this.liveOrphan(id);
      if (orphan) {
        try {
          this.run.set(id, { id, msg: store.readMsg('run', id), orphan, finishing: false, jobStatus: null, timers: [] });
          this.d.log.info({ msg_id: id, worker_pid: orphan.pid }, 'worker from before the restart is still running');
          continue;
        } catch (e) {
          this.d.log.warn({ msg_id: id, err: coerceError(e).message }, 'cannot read running message');
        }
      }
      try {
        store.unclaim(id);
        fromRun.add(id);
      } catch (e) {
        this.d.log.error({ msg_id: id, err: coerceError(e).message }, 'cannot move run message back to que');
      }
    }
    const index = readIndex(layout.indexFile);
    const entries: QueEntry[] = [];
    let reindexed = 0;
    for (const id of store.listFlat('que')) {
      let entry = fromRun.has(id) ? undefined : index.entries.get(id);
      if (!entry) {
        try {
          const msg = store.readMsg('que', id);
          if (msg.due === undefined || msg.due === null) {
            msg.due = nowSec();
            store.writeMsg('que', id, msg);
          }
          entry = entryFromMessage(msg);
          reindexed++;
        } catch (e) {
          this.d.log.error({ msg_id: id, err: coerceError(e).message }, 'unreadable message left in que');
          continue;
        }
      }
      entries.push(entry);
    }
    this.que.load(entries);
    this.d.committer.openJournal(layout.indexFile, index.lines);
    this.refreshFlags();
    this.pump();
    // An index that is not exactly the waiting messages is rewritten (in the committer's next turn).
    if (index.lines !== entries.length || reindexed > 0) this.compactIndex();
    // Off the critical path: counts of the final states.
    setImmediate(() => {
      const errs = store.listFlat('err');
      this.errIds.addAll(errs);
      this.pull.load(entries, errs);
      this.counts = { done: store.countHashed('done'), relayed: store.countHashed('relayed') };
    });
    this.tick = setInterval(() => this.onTick(), TICK_MS);
    this.tick.unref();
    void this.cron.start();
  }

  /** The queue process is exiting: start no more runs (those under way live on). */
  stop(): void {
    this.stopped = true;
  }

  /** A worker from before a restart that is still the same live process. */
  private liveOrphan(id: string): { pid: number; pidFileMs: number } | undefined {
    let fd: number | undefined;
    try {
      fd = fs.openSync(path.join(this.d.layout.msgDir('run', id), 'pid'), 'r');
      const pidFileMs = fs.fstatSync(fd).mtimeMs;
      const pid = Number(fs.readFileSync(fd, 'utf8'));
      if (Number.isInteger(pid) && pid > 0 && isSameWorker(pid, pidFileMs)) return { pid, pidFileMs };
    } catch {
      // no pid file: the worker never started or is gone
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
    return undefined;
  }

  /** Append index lines durably; the index is a cache, so a failure is only logged. */
  private journal(lines: string): Promise<void> {
    return this.d.committer.commit({ journal: lines }).catch((e: unknown) => {
      this.d.log.warn({ err: coerceError(e).message }, 'cannot append to the que index');
    });
  }

  /** SIGHUP: re-read config.json. A bad file keeps the old config and says why. */
  reload(): void {
    try {
      const text = fs.readFileSync(this.d.layout.configFile, 'utf8');
      this.config = parseQueueConfig(text, this.d.layout.configFile);
      this.applyConfig();
      this.d.log.info({ config: this.config }, 'config reloaded');
    } catch (e) {
      this.d.log.error({ err: coerceError(e).message }, 'config reload failed; keeping the old config');
    }
    this.pump();
  }

  private onTick(): void {
    this.refreshFlags();
    this.checkOrphans();
    this.pump();
    if (this.d.committer.journalLines() > Math.max(this.d.indexCompactLines, this.que.size * 4)) this.compactIndex();
  }

  // ───────────────────────────── status ─────────────────────────────

  /**
   * Re-read the admin flag files; dispatch if that un-paused the queue. Called by the
   * `status` and `stats` commands (spec/rq.md §1.11), the flag files' watch and the tick.
   */
  refreshFlags(): void {
    const { layout } = this.d;
    const before = this.admin;
    this.admin = fs.existsSync(layout.downFlag) ? 'DOWN' : fs.existsSync(layout.pauseFlag) ? 'PAUSE' : 'UP';
    if (before !== this.admin) {
      this.d.log.info({ admin: this.admin }, 'admin status changed');
      if (this.admin === 'UP') {
        setImmediate(() => this.onReady());
        void this.cron.check();
      }
    }
  }

  status(): AdminStatus | OperStatus {
    return this.oper !== 'UP' ? this.oper : this.admin;
  }

  /** The admin status from the flag files, as last read. */
  adminStatus(): AdminStatus {
    return this.admin;
  }

  uptimeSec(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }

  numMessages(): Record<State, number> {
    return {
      prep: this.prep.length,
      que: this.que.size,
      run: this.run.size,
      done: this.counts.done,
      relayed: this.counts.relayed,
      err: this.errIds.size,
    };
  }

  /**
   * The `messages` reply for a state (spec/rq.md §5.2), from `offset` on, at most
   * `limit` entries. A paged call (`withStatus`) adds each message's status text.
   */
  messages(state: State, offset: number, limit: number, withStatus: boolean): unknown[] {
    return Array.from(this.listing(state, offset, limit), (item) => {
      const row = this.listingRow(state, item);
      return withStatus ? { ...row, status: this.statusText(state, item.id) } : row;
    });
  }

  /**
   * A state's messages in `messages` order, from `offset` on, at most `limit`: slices of
   * memory for prep, que (without the held duplicates), run and err; for done and
   * relayed the hashed tree, walked only as far as the caller reads.
   */
  private listing(state: State, offset: number, limit: number): Iterable<Listed> {
    switch (state) {
      case 'prep':
        return this.prep.slice(offset, offset + limit).map((id) => ({ id }));
      case 'que':
        return this.que.slice(offset, limit).map((entry) => ({ id: entry.id, entry }));
      case 'run':
        return [...this.run.values()]
          // A finished run whose directory is already in done/ or relayed/ (its commit
          // still syncing) is listed there, from disk, and not here too.
          .filter((run) => !(run.finishing && (this.d.store.exists('done', run.id) || this.d.store.exists('relayed', run.id))))
          .reverse()
          .slice(offset, offset + limit)
          .map((run) => ({ id: run.id, run }));
      case 'err':
        return this.errIds.descending(offset, limit).map((id) => ({ id }));
      case 'done':
      case 'relayed':
        return this.hashedListing(state, offset, limit);
    }
  }

  private *hashedListing(state: State, offset: number, limit: number): Generator<Listed> {
    if (limit <= 0) return;
    let n = 0;
    for (const id of this.d.store.hashedIds(state, offset)) {
      yield { id };
      if (++n >= limit) return;
    }
  }

  /** An entry of RQ's `messages` reply; only relayed reads files (its dest and status). */
  private listingRow(state: State, { id, entry, run }: Listed): Record<string, unknown> {
    const { store } = this.d;
    switch (state) {
      case 'que':
        return { msg_id: id, due: entry?.due, dest: entry?.dest };
      case 'run':
        return { msg_id: id, status: run?.jobStatus ?? 'run', dest: run?.msg.dest };
      case 'relayed': {
        let dest: unknown = null;
        try {
          dest = store.readMsg('relayed', id).dest;
        } catch {
          // shown without dest
        }
        const text = store.readStatus('relayed', id)?.job_status ?? '';
        return { msg_id: id, status: 'relayed', dest, new_msg: text.split(/\s+/).filter(Boolean).pop() ?? '' };
      }
      default:
        return { msg_id: id };
    }
  }

  /**
   * search (RQ's `GET /search`, spec/rq.md §7.3): the read views of the messages that
   * match every query pair (see fieldMatches) and, given a free text, hold it in their id,
   * a param or their status text; visiting the states in SEARCH_ORDER, each in its
   * `messages` order; `offset` matches are skipped, then at most `limit` kept. Views carry
   * no `_attachments`: hashing every attachment would make a search as slow as the queue
   * is big.
   *
   * Fast on a big queue: a state is listed only when the scan reaches it (done and
   * relayed directory by directory), and each field is taken from memory when memory
   * has it (lazyView), so a file is read only for a field memory lacks, or for a match
   * past the offset. A waiting message's status is not in memory: a resent one keeps the
   * status file its run wrote, across restarts too. A message that moves on to a later
   * state during the scan is matched once. A match whose `msg` cannot be read is counted
   * but not shown, so pages never overlap. The scan stops at `limit` matches and lets
   * other events in every SEARCH_READS_PER_TURN file reads.
   */
  async search(q: SearchQuery): Promise<SearchResult> {
    const pairs = Object.entries(q.query);
    const { text } = q;
    const messages: MessageView[] = [];
    const matched = new Set<string>();
    /** Matches past the offset: a page is `limit` matches, whether or not each can be shown. */
    let taken = 0;
    let scanned = 0;
    let reads = 0;
    for (const state of SEARCH_ORDER.filter((s) => q.states.includes(s))) {
      for (const item of this.searchListing(state)) {
        if (taken >= q.limit) return { messages, scanned, truncated: true };
        if (matched.has(item.id)) continue;
        scanned++;
        const view = this.lazyView(state, item);
        try {
          const isMatch =
            pairs.every(([f, value]) => fieldMatches(view.field(f), value, q.exact)) &&
            (text === undefined || TEXT_FIELDS.some((f) => fieldMatches(view.field(f), text, false)));
          if (isMatch) {
            matched.add(item.id);
            if (matched.size > q.offset) {
              taken++;
              messages.push(view.whole());
            }
          }
        } catch {
          // moved on since the listing was taken, or unreadable: not shown
        }
        reads += view.reads;
        if (reads >= SEARCH_READS_PER_TURN) {
          reads = 0;
          await new Promise((r) => setImmediate(r));
        }
      }
    }
    return { messages, scanned, truncated: false };
  }

  /** A state's listing for `search`: que also has the duplicates held aside, after the list. */
  private *searchListing(state: State): Generator<Listed> {
    yield* this.listing(state, 0, Infinity);
    if (state === 'que') for (const entry of [...this.held.values()].flat()) yield { id: entry.id, entry };
  }

  /**
   * A message's read view, built only as far as `search` asks: a field from memory when
   * memory has it (the id, state and path; dest, due and the params of an index entry
   * but a big one, which only `msg` holds; all of a running message), else from `msg`,
   * read once; the status text when asked for. `reads` counts the files read. Own fields
   * only: `constructor` is not a field.
   */
  private lazyView(listed: State, { id, entry, run }: Listed): { field(f: string): unknown; whole(): MessageView; readonly reads: number } {
    let state = listed;
    let msg = run?.msg;
    /** The status text, and the state it was read for (a read one move on changes the state). */
    let status: { state: State; text: string } | undefined;
    let reads = 0;
    const msgOf = (): Message => {
      if (msg === undefined) {
        reads++;
        [state, msg] = this.readMoving(state, id);
      }
      return msg;
    };
    const statusOf = (): string => {
      if (status?.state !== state) {
        reads++;
        status = { state, text: this.statusText(state, id) };
      }
      return status.text;
    };
    return {
      get reads() {
        return reads;
      },
      field: (f) => {
        if (f === 'msg_id') return id;
        if (f === 'state') return state;
        if (f === 'path') return this.d.layout.displayPath(state, id);
        if (f === 'status') return statusOf();
        const known = msg === undefined && entry !== undefined ? entryField(entry, f) : NOT_IN_ENTRY;
        if (known !== NOT_IN_ENTRY) return known;
        const m = msgOf();
        return Object.hasOwn(m, f) ? m[f] : undefined;
      },
      // `msg` first: reading it may find the message one move on, and the rest must agree.
      whole: () => {
        const m = msgOf();
        return this.viewOf(state, id, m, statusOf());
      },
    };
  }

  /**
   * A listed message's `msg`, and the state it was read in: `state`, or one legal move on
   * when its directory is gone from there. A move renames before its group commit's
   * directory fsync ends, and memory follows only then, so for those milliseconds memory
   * still lists the message where it was (a cron message being committed is in memory's
   * prep and on disk in que; a finished run is in memory's run and on disk in done).
   * Throws when it is in neither (deleted, or unreadable).
   */
  private readMoving(state: State, id: string): [State, Message] {
    try {
      return [state, this.d.store.readMsg(state, id)];
    } catch (e) {
      if (this.d.store.exists(state, id)) throw e;
      const to = TRANSITIONS[state].find((s) => this.d.store.exists(s, id));
      if (to === undefined) throw e;
      return [to, this.d.store.readMsg(to, id)];
    }
  }

  // ───────────────────────────── lookups ─────────────────────────────

  fullId(shortId: string): string {
    return fullId(this.d.host, this.name, shortId);
  }

  /** Where a message is (spec/rq.md §2.1 lookup order), or undefined. */
  private stateOf(id: string): State | undefined {
    if (!isSafeId(id)) return undefined;
    const { store } = this.d;
    if (this.prep.includes(id)) return 'prep';
    if (store.exists('que', id)) return 'que';
    if (this.run.has(id)) return 'run';
    // A hashed lookup needs the id pattern: its path is derived from it (spec/rq.md §1.8).
    if (isShortId(id) && store.exists('done', id)) return 'done';
    if (isShortId(id) && store.exists('relayed', id)) return 'relayed';
    if (store.exists('err', id)) return 'err';
    return undefined;
  }

  /**
   * Like `stateOf`, and the directory must exist (every command but state/status). Only
   * prep and run are known from memory; stateOf found the others on disk.
   */
  private find(id: string): State {
    const state = this.stateOf(id);
    if (state === undefined || ((state === 'prep' || state === 'run') && !this.d.store.exists(state, id))) {
      throw new RqError('RQ_NOT_FOUND', 'msg not found');
    }
    return state;
  }

  /** get_message_state: where a message is once no command is changing it (spec/rq.md §2.1). */
  async stateNow(id: string): Promise<State | undefined> {
    await this.locks.settled(id);
    return this.stateOf(id);
  }

  /** The status text: a run's last line from memory when it wrote one, else the status file. */
  private statusText(state: State, id: string): string {
    const run = state === 'run' ? this.run.get(id) : undefined;
    const s = run?.hasStatus ? { job_status: run.jobStatus } : this.d.store.readStatus(state, id);
    return s === undefined ? state : `${state} - ${s.job_status ?? ''}`;
  }

  /** The read view without attachments (spec/rq.md §1.10). */
  private viewOf(state: State, id: string, msg: Message, status: string): MessageView {
    return { ...msg, path: this.d.layout.displayPath(state, id), status, state };
  }

  /**
   * get_message: the read view with `_attachments`, once no command is changing the
   * message. Everything but the attachments' md5 is read in that turn; a message moved
   * on while they were hashed is read again where it went.
   */
  async getMessage(id: string): Promise<MessageView> {
    for (let attempt = 1; ; attempt++) {
      await this.locks.settled(id);
      try {
        return await this.readView(id);
      } catch (e) {
        if (attempt >= 3 || errnoCode(e) !== 'ENOENT') throw e;
      }
    }
  }

  private async readView(id: string): Promise<MessageView> {
    const state = this.find(id);
    const { layout } = this.d;
    let view: MessageView;
    try {
      view = this.viewOf(state, id, this.d.store.readMsg(state, id), this.statusText(state, id));
    } catch (e) {
      throw new RqError('RQ_BAD_MESSAGE', "msg couldn't be read", { cause: e });
    }
    const dir = layout.msgDir(state, id);
    const names = attachmentNames(dir);
    if (names.length > 0) {
      const attachments: NonNullable<MessageView['_attachments']> = {};
      for (const name of names) {
        const file = path.join(dir, 'attach', name);
        attachments[name] = { ...(await hashFile(file)), path: path.join(layout.publicPath(state, id), 'attach', name) };
      }
      view._attachments = attachments;
    }
    return view;
  }

  /** get_message_status, once no command is changing the message. */
  async getStatus(id: string): Promise<{ path: string; status: string; state: State }> {
    const state = await this.stateNow(id);
    if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return { path: this.d.layout.displayPath(state, id), status: this.statusText(state, id), state };
  }

  // ───────────────────────────── creating ─────────────────────────────

  /** create_message / prep_message (spec/rq.md §2.2); `allocated` is told the new id before the commit. Returns the full id. */
  async create(input: MessageInput, to: 'que' | 'prep', allocated?: Allocated): Promise<string> {
    if (!('dest' in input)) throw new RqError('RQ_BAD_MESSAGE', 'input missing required "dest" parameter');
    const { msg, entry } = await this.d.store.create((id) => buildMessage(input, id, this.fullId(id), nowSec()), to, allocated ? { allocated } : {});
    this.stats.messageCreated();
    if (entry) this.queued(entry);
    else this.prep.push(msg.msg_id);
    return this.fullId(msg.msg_id);
  }

  /** A message has entered que: list it and dispatch (a script, or a waiting lease). */
  private queued(entry: QueEntry): void {
    this.que.insert(entry);
    this.d.log.debug({ msg_id: entry.id }, 'message queued');
    this.pull.noticeQueued(entry);
    this.onReady();
  }

  /** Messages may have become ready: start scripts, serve waiting leases. */
  private onReady(): void {
    this.pump();
    this.pull.wake();
  }

  /** single_que: the first waiting message's id if any is waiting, else a new message. */
  async singleQue(input: MessageInput, allocated?: Allocated): Promise<string> {
    const first = this.que.slice(0, 1)[0];
    if (first) return this.fullId(first.id);
    return this.create(input, 'que', allocated);
  }

  /** commit_message (prep → que). */
  async commit(id: string): Promise<void> {
    if (!isSafeId(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
    return this.locks.exclusive(id, async () => {
      if (!this.prep.includes(id) || !this.d.store.exists('prep', id)) {
        throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
      }
      await this.enqueuePrep(id);
    });
  }

  /** commit's move, and memory's update after it. */
  private async enqueuePrep(id: string): Promise<void> {
    let entry: QueEntry;
    try {
      entry = await this.d.store.enqueue(id, 'prep', { msg: this.d.store.readMsg('prep', id) });
    } catch (e) {
      if (isNoSpace(e)) throw e;
      this.d.log.error({ msg_id: id, err: coerceError(e).message }, 'commit failed');
      throw new RqError('RQ_IO', 'unknown reason', { cause: e });
    }
    this.prep = this.prep.filter((p) => p !== id);
    this.queued(entry);
  }

  /** clone_message: a new message from a finished one, attachments linked (§2.11). */
  async clone(id: string): Promise<string> {
    const cloneId = await this.locks.exclusive(id, () => this.prepClone(id));
    await this.commit(cloneId);
    return this.fullId(cloneId);
  }

  /** The clone of message `id`, made in prep with its attachments; returns its id. */
  private async prepClone(id: string): Promise<string> {
    const state = this.find(id);
    if (state !== 'err' && state !== 'relayed' && state !== 'done') {
      throw new RqError('RQ_NOT_IN_STATE', `cannot clone message in ${state} state`);
    }
    const { store, layout } = this.d;
    const old = store.readMsg(state, id);
    const input: MessageInput = { dest: old.dest, orig_msg_id: old.orig_msg_id, max_count: old.max_count, count: 0 };
    for (const k of ['src', ...PARAM_KEYS, 'post_run_webhook', 'due', 'force_remote'] as const) {
      if (k in old) input[k] = old[k];
    }
    const srcDir = layout.msgDir(state, id);
    // Listed while the source is surely there; a clean or a delete may take it during the create.
    const names = attachmentNames(srcDir);
    const { msg } = await store.create((newId) => {
      const m = buildMessage(input, newId, this.fullId(newId), nowSec());
      m.cloned_from = id;
      return m;
    }, 'prep');
    if (names.length > 0) {
      const attachDir = path.join(layout.msgDir('prep', msg.msg_id), 'attach');
      try {
        fs.mkdirSync(attachDir, { recursive: true });
        for (const name of names) linkOrCopy(path.join(srcDir, 'attach', name), path.join(attachDir, name));
      } catch (e) {
        // No clone without all its attachments: the half-made one goes.
        store.remove('prep', msg.msg_id);
        if (errnoCode(e) !== 'ENOENT') throw this.asNoSpace(e);
        throw new RqError('RQ_NOT_FOUND', `msg ${id} was removed while it was being cloned; no clone was made`, { cause: e });
      }
    }
    this.stats.messageCreated();
    this.prep.push(msg.msg_id);
    return msg.msg_id;
  }

  // ───────────────────────────── attachments ─────────────────────────────

  /** A failed write of this queue's files as the store reports it (a full disk: RQ_NO_SPACE naming the queue's directory). */
  private asNoSpace(e: unknown): unknown {
    return asNoSpace(e, path.relative(this.d.root.root, this.d.layout.dir));
  }

  /** attach_message (spec/rq.md §2.10). Returns the md5 of the attached file. */
  async attach(id: string, pathname: unknown, name: unknown): Promise<string> {
    if (!isSafeId(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
    return this.locks.exclusive(id, () => this.attachFile(id, pathname, name));
  }

  private async attachFile(id: string, pathname: unknown, name: unknown): Promise<string> {
    if (!this.prep.includes(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
    const dir = this.d.layout.msgDir('prep', id);
    const fail = (text: string): RqError => new RqError('RQ_ATTACH', text);
    if (!fs.existsSync(dir)) throw fail('No message on disk');
    if (typeof pathname !== 'string' || !pathname.startsWith('/')) {
      throw fail(`Invalid pathname, must be normalized ${String(pathname)} (ie. must start with /`);
    }
    checkAttachmentSource(pathname);
    const attachDir = path.join(dir, 'attach');
    try {
      fs.mkdirSync(attachDir, { recursive: true });
    } catch (e) {
      throw this.asNoSpace(e);
    }
    const attName = typeof name === 'string' && name !== '' ? name : path.basename(pathname);
    if (attName.startsWith('.')) throw fail(`Attachment name as a dot-file not allowed: ${attName}`);
    if (/[$%&*<>?[\]|~/\\\0]/.test(attName) || attName === '..') {
      throw fail(`Attachment name has invalid character. not allowed: ${attName}`);
    }
    // It is linked in as `<name>.tmp` first, and no file name has more than 255 bytes.
    if (Buffer.byteLength(attName) > 251) throw fail(`Attachment name is ${Buffer.byteLength(attName)} bytes long; at most 251 are allowed`);
    const tmp = path.join(attachDir, `${attName}.tmp`);
    fs.rmSync(tmp, { force: true });
    try {
      linkOrCopy(pathname, tmp);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw this.asNoSpace(e);
    }
    const { md5 } = await hashFile(tmp);
    fs.renameSync(tmp, path.join(attachDir, attName));
    return md5;
  }

  /** delete_attach_message, under the message's lock. RQ_ATTACH errors render as `[false, text]` (RQ's quirk). */
  deleteAttachment(id: string, name: unknown): Promise<void> {
    return this.locks.exclusive(id, async () => this.removeAttachment(id, name));
  }

  private removeAttachment(id: string, name: unknown): void {
    const state = this.stateOf(id);
    if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    if (state !== 'prep') throw new RqError('RQ_NOT_IN_STATE', 'msg not in prep');
    const dir = this.d.layout.msgDir('prep', id);
    if (!fs.existsSync(dir)) throw new RqError('RQ_ATTACH', 'No message on disk');
    if (!fs.existsSync(path.join(dir, 'attach'))) throw new RqError('RQ_ATTACH', 'No attach directory for msg');
    const file = typeof name === 'string' && name !== '' && !/[/\0]/.test(name) && !name.startsWith('.') ? name : undefined;
    if (file === undefined || !fs.existsSync(path.join(dir, 'attach', file))) {
      throw new RqError('RQ_ATTACH', 'No attachment with that named for msg');
    }
    fs.rmSync(path.join(dir, 'attach', file));
  }

  // ───────────────────────────── operator verbs ─────────────────────────────

  /**
   * delete_message. prep, que and err are removed; done and relayed too (RQ looked in
   * the wrong, flat place and silently removed nothing). A running message must be
   * destroyed first: we say so instead of RQ's "ok" that deleted nothing.
   */
  deleteMessage(id: string): Promise<void> {
    return this.locks.exclusive(id, async () => this.removeMessage(id));
  }

  private removeMessage(id: string): void {
    const state = this.find(id);
    const { store } = this.d;
    switch (state) {
      case 'run':
        if (!this.run.get(id)?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is running - destroy it first');
        // An external worker's lease has no process to stop.
        this.pull.forgetLease(id);
        this.run.delete(id);
        break;
      case 'prep':
        this.prep = this.prep.filter((p) => p !== id);
        break;
      case 'que':
        this.que.remove(id);
        if (this.heldIds.delete(id)) {
          for (const [parent, list] of this.held) this.held.set(parent, list.filter((e) => e.id !== id));
        }
        break;
      case 'err':
        this.errIds.delete(id);
        this.pull.forgetDead(id);
        break;
      case 'done':
      case 'relayed':
        this.counts[state]--;
        break;
    }
    store.remove(state, id);
    this.d.log.info({ msg_id: id, state }, 'message deleted');
  }

  /** destroy_message: TERM the running worker's process group (RQ signalled only the pid). */
  destroy(id: string): Promise<void> {
    if (!isSafeId(id)) return Promise.reject(new RqError('RQ_NOT_FOUND', 'msg not found'));
    return this.locks.exclusive(id, async () => this.termWorker(id));
  }

  private termWorker(id: string): void {
    const run = this.run.get(id);
    // Its worker has exited: the pid file may name a process that is not ours any more.
    if (run?.finishing) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    if (run?.starting) {
      run.destroyOnStart = true;
      this.d.log.info({ msg_id: id }, 'message destroyed as its worker starts');
      return;
    }
    let pid: number;
    try {
      pid = Number(fs.readFileSync(path.join(this.d.layout.msgDir('run', id), 'pid'), 'utf8'));
    } catch {
      throw new RqError('RQ_NOT_FOUND', 'msg not found');
    }
    if (!Number.isInteger(pid) || pid <= 0) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    killGroup(pid, 'SIGTERM');
    this.d.log.info({ msg_id: id, worker_pid: pid }, 'message destroyed');
  }

  /** run_message: move a waiting message to the front (spec/rq.md §2.11). */
  runNow(id: string): Promise<void> {
    return this.locks.exclusive(id, () => this.moveToFront(id));
  }

  private async moveToFront(id: string): Promise<void> {
    const state = this.stateOf(id);
    if (state === 'run') throw new RqError('RQ_NOT_IN_STATE', 'msg already running');
    // RQ's text for a missing message too; the code tells the two apart (the web's 404 and 409).
    if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not in runnable state');
    if (state !== 'que') throw new RqError('RQ_NOT_IN_STATE', 'msg not in runnable state');
    const entry = this.que.get(id);
    if (!entry) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    // The first message in run order, due now or not: the moved one goes before it.
    const first = this.que.slice(0, 1)[0]!;
    const due = Math.min(nowSec(), Math.floor(first.dueMs / 1000) - 1);
    const msg = this.d.store.readMsg('que', id);
    msg.due = due;
    this.d.store.writeMsg('que', id, msg);
    const moved = entryFromMessage(msg);
    // Memory first: a compaction of the index from now on writes the new due.
    this.que.insert(moved);
    await this.journal(journalLine(moved));
    this.pump();
  }

  // ───────────────────────────── scheduling ─────────────────────────────

  private liveWorkers(): number {
    let n = 0;
    for (const r of this.run.values()) if (!r.finishing && (r.worker || r.starting || r.orphan)) n++;
    return n;
  }

  /**
   * The scheduler pass (spec/rq.md §2.4), filling every free slot: a waiting message
   * starts when it is due, a slot is free, and no running message has its blocking key.
   */
  pump(): void {
    if (this.stopped) return;
    if (this.oper === 'SCRIPTERROR') this.retryStuckRuns();
    if (this.status() === 'UP' && !this.isPull()) {
      while (this.liveWorkers() < this.config.num_workers && !this.spaceTimer) {
        const candidate = this.candidate();
        if (!candidate) break;
        this.startRun(candidate);
        if (this.status() !== 'UP') break;
      }
    }
    // The next delayed message wakes the scheduler and the waiting leases when it comes due.
    const next = this.que.nextDueMs();
    if (next !== undefined) this.armDueTimer(next);
  }

  /** The first ready message no running message blocks (spec/rq.md §2.4 blocking params). */
  private candidate(): QueEntry | undefined {
    const blocking = this.config.blocking_params;
    if (blocking.length === 0) return this.que.head();
    const busy = new Set<string>();
    for (const r of this.run.values()) if (!r.finishing) busy.add(paramKey((r.params ??= entryFromMessage(r.msg).params), blocking));
    for (const e of this.que.readyEntries()) if (!busy.has(paramKey(e.params, blocking))) return e;
    return undefined;
  }

  /**
   * A write met a full disk (a run's start or finish, a command's write): no run starts
   * until the space timer fires, NO_SPACE_RETRY_MS after the first refusal since it last
   * fired, when the refused finishes and the next starts are tried again. (A refusal does
   * not put the timer off: refused commands must not keep the runs from being tried.) The
   * log says so once, when the disk fills.
   */
  noteNoSpace(e: unknown): void {
    if (this.noSpaceSince === undefined) {
      this.noSpaceSince = Date.now();
      const runs = this.isPull() ? '' : ', and runs wait in que';
      this.d.log.error({ err: coerceError(e).message }, `the disk is full: writes are refused${runs} until one works again, tried every second`);
    }
    this.spaceTimer ??= setTimeout(() => {
      this.spaceTimer = undefined;
      for (const [run, outcome] of this.unfinished) {
        this.unfinished.delete(run);
        void this.finishRun(run, outcome);
      }
      this.pump();
    }, NO_SPACE_RETRY_MS);
  }

  /** A write worked (a run's start or finish, a command that writes): the disk has room again. */
  spaceAgain(): void {
    if (this.noSpaceSince === undefined) return;
    this.d.log.info({ full_ms: Date.now() - this.noSpaceSince }, `the disk has room again${this.isPull() ? '' : ': runs start'}`);
    this.noSpaceSince = undefined;
  }

  private armDueTimer(atMs: number): void {
    if (this.dueTimer && this.dueTimerAt <= atMs) return;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimerAt = atMs;
    this.dueTimer = setTimeout(
      () => {
        this.dueTimer = undefined;
        this.dueTimerAt = Infinity;
        this.onReady();
      },
      Math.min(Math.max(atMs - Date.now(), 0), 2 ** 31 - 1),
    );
  }

  /** que → run, coalesce, spawn (spec/rq.md §2.5). */
  private startRun(entry: QueEntry): void {
    const { store, log } = this.d;
    this.que.remove(entry.id);
    try {
      store.claim(entry.id);
    } catch (e) {
      if (isNoSpace(e)) {
        this.que.insert(entry);
        this.noteNoSpace(e);
        return;
      }
      log.error({ msg_id: entry.id, err: coerceError(e).message }, 'cannot move message to run; it stays in que on disk');
      return;
    }
    let msg: Message;
    try {
      msg = store.readMsg('run', entry.id);
    } catch (e) {
      log.error({ msg_id: entry.id, err: coerceError(e).message }, 'unreadable message moved to err');
      this.run.set(entry.id, { id: entry.id, msg: { msg_id: entry.id, dest: entry.dest, count: 0, max_count: 0 }, finishing: true, jobStatus: null, timers: [] });
      void this.finishRun(this.run.get(entry.id)!, { state: 'err', status: 'UNREADABLE MESSAGE - MOVING TO ERR' });
      return;
    }
    const dups = this.que.duplicatesOf(entry);
    if (dups.length > 0) {
      for (const dup of dups) {
        this.que.remove(dup.id);
        this.heldIds.add(dup.id);
      }
      this.held.set(entry.id, dups);
    }
    const run: RunEntry = { id: entry.id, msg, params: entry.params, finishing: false, jobStatus: null, timers: [] };
    this.run.set(entry.id, run);
    this.spawnFor(run);
  }

  /** Spawn the script for a run entry; on a missing script the queue shows SCRIPTERROR. */
  private spawnFor(run: RunEntry): boolean {
    const { layout, log } = this.d;
    const realScript = this.runnableScript();
    if (realScript === undefined) {
      if (this.oper !== 'SCRIPTERROR') log.error({ script: this.config.script }, 'script is not executable: SCRIPTERROR');
      this.oper = 'SCRIPTERROR';
      if (!run.waitsForScript) this.stats.spawnFailed();
      run.waitsForScript = true;
      return false;
    }
    const dir = layout.msgDir('run', run.id);
    const jobDir = path.join(dir, 'job');
    // Decided here, with the script check: a start reported later must not undo a
    // SCRIPTERROR found since.
    this.oper = 'UP';
    try {
      fs.mkdirSync(jobDir, { recursive: true });
    } catch (e) {
      this.notStarted(run, coerceError(e).message, errnoCode(e));
      return true;
    }
    run.starting = true;
    this.d.spawner.spawn(
      {
        argv: commandArgv(this.config.exec_prefix, realScript),
        cwd: jobDir,
        env: this.workerEnv(run.msg, realScript),
        logFile: path.join(jobDir, 'stdio.log'),
        realScript,
        pidFile: path.join(dir, 'pid'),
      },
      {
        onStart: (worker) => this.onStart(run, worker),
        onFail: (error, code) => this.notStarted(run, error, code),
        onLine: (line) => this.onLine(run, line),
        onExit: (code, signal) => this.onExit(run, code, signal),
        onLost: () => this.onLost(run),
      },
    );
    return true;
  }

  /**
   * The script did not start (`code`: the errno, when there is one). For a full disk the
   * message goes back to que as it was, unless a destroy_message came for it, which ends
   * it in err as any other failed spawn.
   */
  private notStarted(run: RunEntry, error: string, code: string | undefined): void {
    const { log } = this.d;
    run.starting = false;
    run.finishing = true;
    this.stats.spawnFailed();
    if (isNoSpace({ code }) && !run.destroyOnStart) {
      this.noteNoSpace(new Error(error));
      this.backToQue(run);
      log.debug({ msg_id: run.id, err: error }, 'cannot start: the disk is full; back in que');
      return;
    }
    log.error({ msg_id: run.id, err: error }, 'spawn failed');
    void this.finishRun(run, { state: 'err', status: `SPAWN FAILED - MOVING TO ERR - ${error}` });
  }

  /**
   * que ← run for a run that never started: the bare rename back (store.unclaim), its
   * index entry as it was, and the duplicates it held waiting in que again.
   */
  private backToQue(run: RunEntry): void {
    const dups = this.held.get(run.id) ?? [];
    void this.locks.exclusive([run.id, ...dups.map((d) => d.id)], async () => {
      this.run.delete(run.id);
      this.releaseHeld(run.id);
      try {
        this.d.store.unclaim(run.id);
        this.que.insert(entryFromMessage(run.msg));
      } catch (e) {
        this.d.log.error({ msg_id: run.id, err: coerceError(e).message }, 'cannot move message back to que; it stays in run/ until restart');
      }
    });
  }

  private onStart(run: RunEntry, worker: RunningWorker): void {
    run.starting = false;
    run.worker = worker;
    run.spawnedAt = Date.now();
    this.spaceAgain();
    const { log } = this.d;
    if (run.destroyOnStart) {
      log.info({ msg_id: run.id, worker_pid: worker.pid }, 'message destroyed');
      worker.kill('SIGTERM');
    }
    if (this.config.timeout !== null) {
      const timeoutSec = this.config.timeout;
      run.timers.push(
        setTimeout(() => {
          run.timedOutAfterSec = timeoutSec;
          log.warn({ msg_id: run.id, worker_pid: worker.pid, timeout: timeoutSec }, 'run timed out: TERM to its process group');
          worker.kill('SIGTERM');
          run.timers.push(setTimeout(() => worker.kill('SIGKILL'), KILL_GRACE_MS));
        }, timeoutSec * 1000),
      );
    }
    log.debug({ msg_id: run.id, worker_pid: worker.pid }, 'worker started');
  }

  /**
   * The spawner went away while this run's worker was starting or running: its status
   * pipe is gone, so the run is handled as after a restart. A worker still alive is
   * waited for (an orphan); otherwise the message goes back to que, due in a second.
   */
  private onLost(run: RunEntry): void {
    run.starting = false;
    delete run.worker;
    const orphan = this.liveOrphan(run.id);
    if (orphan) {
      // Its timeout still applies (the timer signals the process group by pid).
      run.orphan = orphan;
      if (run.destroyOnStart) killGroup(orphan.pid, 'SIGTERM');
      return;
    }
    run.finishing = true;
    this.d.log.warn({ msg_id: run.id }, 'worker lost with the spawner; requeued for 1 s from now');
    // Not at once: a spawner that dies as soon as it starts would otherwise be restarted in a
    // tight loop.
    void this.finishRun(run, { state: 'que', delaySec: 1 });
  }

  /** The script's real path if it is runnable (checked at most once a second), else undefined. */
  private runnableScript(): string | undefined {
    const now = Date.now();
    if (this.script && now - this.script.checkedAt < SCRIPT_CHECK_MS) return this.script.real;
    const real = resolveScript(this.d.root.root, this.config.script);
    this.script = isRunnable(real) ? { real, checkedAt: now } : undefined;
    return this.script?.real;
  }

  /** While SCRIPTERROR: spawn the runs that have no worker once the script is runnable. */
  private retryStuckRuns(): void {
    for (const r of this.run.values()) {
      if (!r.worker && !r.starting && !r.orphan && !r.finishing && !r.msg.lease && !this.spawnFor(r)) return;
    }
    if (this.oper === 'SCRIPTERROR' && this.runnableScript() !== undefined) this.oper = 'UP';
  }

  /** The worker's environment (spec/rq.md §3.2). */
  private workerEnv(msg: Message, realScript: string): NodeJS.ProcessEnv {
    const { host, layout } = this.d;
    const env: NodeJS.ProcessEnv = { ...this.baseEnv };
    const dest = typeof msg.dest === 'string' ? msg.dest : JSON.stringify(msg.dest);
    const base = `http://${host.host}:${host.port}`;
    const destUrl = dest.startsWith('http:') ? dest : dest.startsWith('/q/') ? `${base}${dest}` : `${base}/q/${dest}`;
    const destQueue = dest.startsWith('http:') || dest.startsWith('/q/') ? (parseFullId(dest).queue ?? '') : dest;
    Object.assign(env, {
      RQ_VER: RQ_VERSION,
      RQ_SCRIPT: this.config.script,
      RQ_REALSCRIPT: realScript,
      RQ_HOST: hostUrl(host),
      RQ_DEST: destUrl,
      RQ_DEST_QUEUE: destQueue,
      RQ_MSG_ID: msg.msg_id,
      RQ_FULL_MSG_ID: this.fullId(msg.msg_id),
      RQ_ORIG_MSG_ID: fieldText(msg.orig_msg_id),
      RQ_MSG_DIR: path.join(layout.publicPath('run', msg.msg_id), 'job'),
      RQ_WRITE: '3',
      RQ_READ: '4',
      RQ_PIPE: '3',
      RQ_COUNT: String(msg.count ?? 0),
    });
    // Linux refuses to exec with one variable of 128 KiB or more (E2BIG): such a param is
    // given as '' and the script reads it from `../msg` (README: Writing a queue script).
    for (const [i, key] of PARAM_KEYS.entries()) {
      const name = `RQ_PARAM${i + 1}`;
      const text = fieldText(msg[key]);
      env[name] = Buffer.byteLength(`${name}=${text}`) < MAX_ENV_VAR_BYTES ? text : '';
    }
    if (msg.force_remote !== undefined && msg.force_remote !== null && msg.force_remote !== false) env['RQ_FORCE_REMOTE'] = '1';
    else delete env['RQ_FORCE_REMOTE'];
    return env;
  }

  // ───────────────────────────── worker reports ─────────────────────────────

  private onLine(run: RunEntry, line: string): void {
    const report: WorkerReport = parseLine(line);
    run.jobStatus = report.text;
    run.hasStatus = true;
    run.statusTimer ??= setTimeout(() => this.writeRunStatus(run), STATUS_WRITE_MS);
    const { store, log } = this.d;
    if (report.kind === 'resend') {
      run.msg.due = nowSec() + report.delaySec;
      run.msg.count = (run.msg.count ?? 0) + 1;
      try {
        store.writeMsg('run', run.id, run.msg);
      } catch (e) {
        log.warn({ msg_id: run.id, err: coerceError(e).message }, 'cannot save resend');
      }
    }
    if (isCompletion(report)) run.first ??= report;
    if (report.kind === 'dup') {
      void this.dup(run, report).then((reply) => run.worker?.reply(reply));
    }
  }

  private writeRunStatus(run: RunEntry): void {
    run.statusTimer = undefined;
    if (run.finishing) return;
    try {
      this.d.store.writeStatus('run', run.id, run.jobStatus);
    } catch (e) {
      // The last line is written with the move out of run, once there is room.
      if (isNoSpace(e)) this.noteNoSpace(e);
      else this.d.log.warn({ msg_id: run.id, err: coerceError(e).message }, 'cannot write status');
    }
  }

  private onExit(run: RunEntry, code: number | null, signal: NodeJS.Signals | null): void {
    run.finishing = true;
    const exit = {
      pid: run.worker?.pid ?? 0,
      code,
      signal,
      ...(run.timedOutAfterSec !== undefined ? { timedOutAfterSec: run.timedOutAfterSec } : {}),
    };
    if (run.spawnedAt !== undefined) this.stats.runEnded((Date.now() - run.spawnedAt) / 1000);
    const outcome = decideOutcome(exit, run.first, run.msg.count ?? 0, run.msg.max_count ?? 15);
    this.d.log.info({ msg_id: run.id, worker_pid: exit.pid, code, signal, state: outcome.state }, 'run ended');
    void this.finishRun(run, outcome);
    // A worker may have set a flag file as it ended (the router takes its queue DOWN on
    // a bad rules file); read them before the next message is started.
    this.refreshFlags();
    this.pump();
  }

  /** Move a finished run to its next state, with its held-aside duplicates (§2.6, §2.9). */
  private finishRun(run: RunEntry, outcome: RunOutcome): Promise<void> {
    const dups = this.held.get(run.id) ?? [];
    return this.locks.exclusive([run.id, ...dups.map((d) => d.id)], () => this.moveFinished(run, outcome));
  }

  /** finishRun's move, and memory's update after it. */
  private async moveFinished(run: RunEntry, outcome: RunOutcome): Promise<void> {
    const { store, layout, log } = this.d;
    const dir = layout.msgDir('run', run.id);
    for (const t of run.timers) clearTimeout(t);
    run.timers = [];
    if (run.statusTimer) clearTimeout(run.statusTimer);
    run.statusTimer = undefined;
    fs.rmSync(path.join(dir, 'pid'), { force: true });
    // The status to commit with the move: the outcome's, else the run's last line.
    const status: { status?: JobStatus } =
      'status' in outcome && outcome.status !== undefined ? { status: outcome.status } : run.hasStatus ? { status: run.jobStatus } : {};
    // Held until each is moved: a full disk may stop this finish half-way (see below).
    const dups = this.held.get(run.id) ?? [];
    const msg = run.msg;
    const to = outcome.state;
    try {
      if (to === 'done' || to === 'relayed') {
        const parent = this.fullId(run.id);
        const moved = (run.movedDups ??= []);
        for (let d = dups[0]; d !== undefined; d = dups[0]) {
          try {
            const dmsg = store.readMsg('que', d.id);
            dmsg.dup = parent;
            await store.move(d.id, 'que', to, { msg: dmsg, status: `duplicate ${parent}` });
            this.counts[to]++;
            this.stats.messageFinished(to);
            moved.push(this.fullId(d.id));
          } catch (e) {
            if (isNoSpace(e)) throw e;
            log.warn({ msg_id: d.id, err: coerceError(e).message }, 'duplicate vanished before its parent finished');
          }
          dups.shift();
          this.heldIds.delete(d.id);
        }
        if (moved.length > 0) msg.dups = moved;
        await store.move(run.id, 'run', to, { ...status, ...(moved.length > 0 ? { msg } : {}) });
        this.counts[to]++;
        this.stats.messageFinished(to);
      } else {
        this.releaseHeld(run.id);
        delete msg.dups;
        if (outcome.state === 'que') {
          msg.due = nowSec() + outcome.delaySec;
          this.que.insert(await store.enqueue(run.id, 'run', { ...status, msg }));
        } else {
          await store.move(run.id, 'run', 'err', status);
          this.errIds.add(run.id);
          this.stats.messageFinished('err');
        }
      }
      this.spaceAgain();
      if (to !== 'que') this.queueWebhooks(run.id, msg, to);
    } catch (e) {
      if (isNoSpace(e)) {
        // Still in run, on disk and here: tried again when the disk has room (noteNoSpace).
        this.unfinished.set(run, outcome);
        this.noteNoSpace(e);
        return;
      }
      log.error({ msg_id: run.id, err: coerceError(e).message, to }, 'cannot finish run; it stays in run/ until restart');
    }
    this.releaseHeld(run.id);
    this.run.delete(run.id);
    this.pump();
  }

  /** The duplicates a run holds aside wait in que again as messages of their own. */
  private releaseHeld(id: string): void {
    for (const d of this.held.get(id) ?? []) {
      this.heldIds.delete(d.id);
      this.que.insert(d);
    }
    this.held.delete(id);
  }

  /**
   * Post-run webhooks (spec/rq.md §9.1): at a final state, one message per URL of a
   * `post_run_webhook` array, created in the local `webhook` queue. The payload is the
   * message with its full id and final state. A missing or refusing `webhook` queue is
   * logged; the run's own move has already been committed either way.
   */
  private queueWebhooks(id: string, msg: Message, state: 'done' | 'relayed' | 'err'): void {
    const hooks = msg.post_run_webhook;
    if (!Array.isArray(hooks)) return;
    const snapshot = JSON.stringify({ ...msg, msg_id: this.fullId(id), state });
    for (const url of hooks) {
      const input = { dest: 'webhook', param1: url, param2: snapshot };
      this.d
        .callQueue('webhook', 'create_message', input)
        .then((reply) => {
          if (!isOk(reply)) throw new Error(JSON.stringify(reply));
        })
        .catch((e: unknown) => this.d.log.error({ msg_id: id, url, err: coerceError(e).message }, 'cannot queue a post-run webhook'));
    }
  }

  // ───────────────────────────── dup ─────────────────────────────

  /**
   * A worker's `dup <delay>-<flag>-<destination>` (spec/rq.md §3.4): a copy of the running
   * message, with its attachments, in another queue (or `relay` for a URL). Answered
   * with `ok <full id>` or `fail <reason>`. Dup to this same queue is served in-process.
   */
  private async dup(run: RunEntry, r: Extract<WorkerReport, { kind: 'dup' }>): Promise<string> {
    const target = r.destination.startsWith('http') ? 'relay' : r.destination;
    if (!isValidQueueName(target) || !fs.existsSync(path.join(this.d.root.queuesDir, target))) {
      return `fail couldn't connect to queue - ${target}`;
    }
    const m = run.msg;
    const input: MessageInput = { dest: r.destination, orig_msg_id: m.orig_msg_id, count: 0, max_count: m.max_count ?? 15 };
    for (const k of ['src', ...PARAM_KEYS, 'post_run_webhook'] as const) if (k in m) input[k] = m[k];
    input['due'] = nowSec() + r.delaySec;
    const call = this.d.callQueue;
    const reason = (reply: unknown): string => (Array.isArray(reply) ? String(reply[1]) : String(reply));
    try {
      const dir = this.d.layout.msgDir('run', run.id);
      const names = attachmentNames(dir);
      if (names.length === 0) {
        const reply = await call(target, 'create_message', input);
        return isOk(reply) ? `ok ${reply[1]}` : `fail dup failed - ${reason(reply)}`;
      }
      const prep = await call(target, 'prep_message', input);
      if (!isOk(prep)) return `fail dup failed - prep fail ${reason(prep)}`;
      for (const name of names) {
        const att = await call(target, 'attach_message', { msg_id: prep[1], pathname: path.join(dir, 'attach', name), name });
        if (!isOk(att)) return `fail dup failed - attach fail ${reason(att)}`;
      }
      const commit = await call(target, 'commit_message', { msg_id: prep[1] });
      if (!isOk(commit)) return `fail dup failed - commit fail ${reason(commit)}`;
      return `ok ${prep[1]}`;
    } catch (e) {
      return `fail dup failed - ${coerceError(e).message}`;
    }
  }

  // ───────────────────────────── index upkeep ─────────────────────────────

  /**
   * Rewrite the que index with exactly the waiting messages (held duplicates included),
   * from memory, when the committer is between flushes (see group-commit.ts).
   */
  private compactIndex(): void {
    if (this.compacting) return;
    this.compacting = true;
    const file = this.d.layout.indexFile;
    void this.d.committer
      .replaceJournal(file, () => {
        const entries = [...this.que];
        for (const list of this.held.values()) entries.push(...list);
        writeIndex(file, entries);
        return entries.length;
      })
      .catch((e: unknown) => this.d.log.warn({ err: coerceError(e).message }, 'cannot compact the que index'))
      .finally(() => (this.compacting = false));
  }

  /**
   * A hint (file watch) that `que/<id>` appeared or vanished. The queue's own renames
   * are recognised from memory; a directory an operator dropped in is read and queued
   * (retried while its `msg` is still being written), one removed by hand is forgotten.
   */
  noticeQueName(id: string, attempt = 0): void {
    if (!isSafeId(id) || id.startsWith('_') || this.heldIds.has(id) || this.run.has(id)) return;
    if (this.locks.isBusy(id)) {
      // Being moved or changed: look again once that is over.
      void this.locks.settled(id).then(() => this.noticeQueName(id, attempt));
      return;
    }
    const { store } = this.d;
    if (this.que.has(id)) {
      if (!store.exists('que', id)) this.que.remove(id);
      return;
    }
    if (!store.exists('que', id)) return;
    let msg: Message;
    try {
      msg = store.readMsg('que', id);
    } catch {
      if (attempt < 20) setTimeout(() => this.noticeQueName(id, attempt + 1), 250).unref();
      return;
    }
    if (msg.due === undefined || msg.due === null) {
      msg.due = nowSec();
      store.writeMsg('que', id, msg);
    }
    const entry = entryFromMessage(msg);
    void this.journal(journalLine(entry)).then(() => {
      if (this.locks.isBusy(id)) return this.noticeQueName(id, attempt);
      if (!this.que.has(id) && !this.run.has(id) && store.exists('que', id)) {
        this.que.insert(entry);
        this.d.log.info({ msg_id: id }, 'picked up a message added to que/ by hand');
        this.pump();
      }
    });
  }

  /** Poll orphans (workers from before a restart): once gone, back to que. */
  private checkOrphans(): void {
    for (const r of this.run.values()) {
      if (!r.orphan || r.finishing || isSameWorker(r.orphan.pid, r.orphan.pidFileMs)) continue;
      r.finishing = true;
      this.d.log.info({ msg_id: r.id, worker_pid: r.orphan.pid }, 'worker from before the restart has exited; requeued');
      void this.finishRun(r, { state: 'que', delaySec: 0 });
    }
  }
}
