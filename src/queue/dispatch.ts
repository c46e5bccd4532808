/**
 * Dispatch of a script queue: pump → spawn → exit → move. The scheduler pass fills every
 * free slot with the first ready message no running message blocks (`blocking_params`),
 * claims it (que → run), holds its coalesced duplicates aside, and asks the spawner for
 * its worker. Dispatch happens straight from the event that frees a slot or makes a
 * message ready (a commit, a worker's exit, a due timer, a flag change: `nudge`); the 1 s
 * tick re-reads the admin flags, watches workers left from before a restart, and retries
 * a script that was not runnable (SCRIPTERROR).
 *
 * A run that cannot start for a full disk goes back to que as it was (count unchanged),
 * and while the disk is full no run is started (finish-run.ts).
 */
import path from 'node:path';
import { coerceError, errnoCode, isNoSpace } from '../domain/errors.js';
import type { Message } from '../domain/message.js';
import { decideOutcome } from '../spawn/outcome.js';
import { commandArgv, isRunnable, isSameWorker, killGroup, resolveScript, type RunningWorker } from '../spawn/runner.js';
import { entryFromMessage, type QueEntry } from '../store/que-index.js';
import { finishRun, noteNoSpace, releaseHeld, spaceAgain } from './finish-run.js';
import { waitedMs } from './history.js';
import { refreshFlags } from './flags.js';
import { paramKey } from './que-list.js';
import { onLine } from './reports.js';
import { isPull, statusOf, type QueueState, type RunEntry } from './state.js';
import { armDueTimer } from './timers.js';
import { workerEnv } from './worker-env.js';

/** Grace between TERM and KILL when a run hits the queue's `timeout`. */
const KILL_GRACE_MS = 5_000;
/** How long a successful check of the script (real path, executable) is trusted. */
const SCRIPT_CHECK_MS = 1_000;

function liveWorkers(s: QueueState): number {
  let n = 0;
  for (const r of s.run.values()) if (!r.finishing && (r.worker || r.starting || r.orphan)) n++;
  return n;
}

/**
 * The scheduler pass, filling every free slot: a waiting message
 * starts when it is due, a slot is free, and no running message has its blocking key.
 */
export function pump(s: QueueState): void {
  if (s.dispatch.stopped) return;
  if (s.oper === 'SCRIPTERROR') retryStuckRuns(s);
  if (statusOf(s) === 'UP' && !isPull(s)) {
    while (liveWorkers(s) < s.config.num_workers && !s.dispatch.spaceTimer) {
      const next = candidate(s);
      if (!next) break;
      startRun(s, next);
      if (statusOf(s) !== 'UP') break;
    }
  }
  // The next delayed message wakes the scheduler and the waiting leases when it comes due.
  const next = s.que.nextDueMs();
  if (next !== undefined) armDueTimer(s, next);
}

/** The first ready message no running message blocks (`blocking_params`). */
function candidate(s: QueueState): QueEntry | undefined {
  const blocking = s.config.blocking_params;
  if (blocking.length === 0) return s.que.head();
  const busy = new Set<string>();
  for (const r of s.run.values()) if (!r.finishing) busy.add(paramKey((r.params ??= entryFromMessage(r.msg).params), blocking));
  for (const e of s.que.readyEntries()) if (!busy.has(paramKey(e.params, blocking))) return e;
  return undefined;
}

/** que → run, coalesce, spawn. */
function startRun(s: QueueState, entry: QueEntry): void {
  const { store, log } = s;
  s.que.remove(entry.id);
  try {
    store.claim(entry.id);
  } catch (e) {
    if (isNoSpace(e)) {
      s.que.insert(entry);
      noteNoSpace(s, e);
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
    const unreadable: RunEntry = { id: entry.id, msg: { msg_id: entry.id, dest: entry.dest, count: 0, max_count: 0 }, finishing: true, jobStatus: null, timers: [] };
    s.run.set(entry.id, unreadable);
    void finishRun(s, unreadable, { state: 'err', status: 'UNREADABLE MESSAGE - MOVING TO ERR' });
    return;
  }
  s.stats.runStarted(waitedMs(entry));
  const dups = s.que.duplicatesOf(entry);
  if (dups.length > 0) {
    for (const d of dups) {
      s.que.remove(d.id);
      s.heldIds.add(d.id);
    }
    s.held.set(entry.id, dups);
  }
  const run: RunEntry = { id: entry.id, msg, params: entry.params, finishing: false, jobStatus: null, timers: [], startedAt: Date.now() };
  s.run.set(entry.id, run);
  spawnFor(s, run);
}

/** The script's real path if it is runnable (checked at most once a second), else undefined. */
function runnableScript(s: QueueState): string | undefined {
  const now = Date.now();
  const d = s.dispatch;
  if (d.script && now - d.script.checkedAt < SCRIPT_CHECK_MS) return d.script.real;
  const real = resolveScript(s.root.root, s.config.script);
  d.script = isRunnable(real) ? { real, checkedAt: now } : undefined;
  return d.script?.real;
}

/** While SCRIPTERROR: spawn the runs that have no worker once the script is runnable. */
function retryStuckRuns(s: QueueState): void {
  for (const r of s.run.values()) {
    if (!r.worker && !r.starting && !r.orphan && !r.finishing && !r.msg.lease && !spawnFor(s, r)) return;
  }
  if (s.oper === 'SCRIPTERROR' && runnableScript(s) !== undefined) s.oper = 'UP';
}

/** Spawn the script for a run entry; on a missing script the queue shows SCRIPTERROR. */
function spawnFor(s: QueueState, run: RunEntry): boolean {
  const { log } = s;
  const realScript = runnableScript(s);
  if (realScript === undefined) {
    if (s.oper !== 'SCRIPTERROR') log.error({ script: s.config.script }, 'script is not executable: SCRIPTERROR');
    s.oper = 'SCRIPTERROR';
    if (!run.waitsForScript) s.stats.spawnFailed();
    run.waitsForScript = true;
    return false;
  }
  // Decided here, with the script check: a start reported later must not undo a
  // SCRIPTERROR found since.
  s.oper = 'UP';
  let jobDir: string;
  try {
    jobDir = s.store.makeJobDir(run.id);
  } catch (e) {
    notStarted(s, run, coerceError(e).message, errnoCode(e));
    return true;
  }
  run.starting = true;
  s.spawner.spawn(
    {
      argv: commandArgv(s.config.exec_prefix, realScript),
      cwd: jobDir,
      env: workerEnv(s, run.msg, realScript),
      logFile: path.join(jobDir, 'stdio.log'),
      realScript,
      pidFile: s.store.pidFile(run.id),
    },
    {
      onStart: (worker) => onStart(s, run, worker),
      onFail: (error, code) => notStarted(s, run, error, code),
      onLine: (line) => onLine(s, run, line),
      onExit: (code, signal, ranMs) => onExit(s, run, code, signal, ranMs),
      onLost: () => onLost(s, run),
    },
  );
  return true;
}

/**
 * The script did not start (`code`: the errno, when there is one). For a full disk the
 * message goes back to que as it was, unless a destroy_message came for it, which ends
 * it in err as any other failed spawn.
 */
function notStarted(s: QueueState, run: RunEntry, error: string, code: string | undefined): void {
  run.starting = false;
  run.finishing = true;
  s.stats.spawnFailed();
  if (isNoSpace({ code }) && !run.destroyOnStart) {
    noteNoSpace(s, new Error(error));
    backToQue(s, run);
    s.log.debug({ msg_id: run.id, err: error }, 'cannot start: the disk is full; back in que');
    return;
  }
  s.log.error({ msg_id: run.id, err: error }, 'spawn failed');
  void finishRun(s, run, { state: 'err', status: `SPAWN FAILED - MOVING TO ERR - ${error}` });
}

/**
 * que ← run for a run that never started: the bare rename back (store.unclaim), its
 * index entry as it was, and the duplicates it held waiting in que again.
 */
function backToQue(s: QueueState, run: RunEntry): void {
  const dups = s.held.get(run.id) ?? [];
  void s.locks.exclusive([run.id, ...dups.map((d) => d.id)], async () => {
    s.run.delete(run.id);
    releaseHeld(s, run.id);
    try {
      s.store.unclaim(run.id);
      s.que.insert(entryFromMessage(run.msg));
    } catch (e) {
      s.log.error({ msg_id: run.id, err: coerceError(e).message }, 'cannot move message back to que; it stays in run/ until restart');
    }
  });
}

function onStart(s: QueueState, run: RunEntry, worker: RunningWorker): void {
  run.starting = false;
  run.worker = worker;
  spaceAgain(s);
  const { log } = s;
  if (run.destroyOnStart) {
    log.info({ msg_id: run.id, worker_pid: worker.pid }, 'message destroyed');
    worker.kill('SIGTERM');
  }
  if (s.config.timeout !== null) {
    const timeoutSec = s.config.timeout;
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
function onLost(s: QueueState, run: RunEntry): void {
  run.starting = false;
  delete run.worker;
  const orphan = liveOrphan(s, run.id);
  if (orphan) {
    // Its timeout still applies (the timer signals the process group by pid).
    run.orphan = orphan;
    if (run.destroyOnStart) killGroup(orphan.pid, 'SIGTERM');
    return;
  }
  run.finishing = true;
  s.log.warn({ msg_id: run.id }, 'worker lost with the spawner; requeued for 1 s from now');
  // Not at once: a spawner that dies as soon as it starts would otherwise be restarted in a
  // tight loop.
  void finishRun(s, run, { state: 'que', delaySec: 1 });
}

function onExit(s: QueueState, run: RunEntry, code: number | null, signal: NodeJS.Signals | null, ranMs: number): void {
  run.finishing = true;
  run.exit = signal ?? String(code);
  const exit = {
    pid: run.worker?.pid ?? 0,
    code,
    signal,
    ...(run.timedOutAfterSec !== undefined ? { timedOutAfterSec: run.timedOutAfterSec } : {}),
  };
  // Timed by the spawner: here, a short run's start and exit may arrive in one turn.
  s.stats.runEnded(ranMs / 1000);
  const outcome = decideOutcome(exit, run.first, run.msg.count ?? 0, run.msg.max_count ?? 15);
  s.log.info({ msg_id: run.id, worker_pid: exit.pid, code, signal, state: outcome.state }, 'run ended');
  void finishRun(s, run, outcome);
  // A worker may have set a flag file as it ended (the router takes its queue DOWN on
  // a bad rules file); read them before the next message is started.
  refreshFlags(s);
  pump(s);
}

/** A worker from before a restart that is still the same live process. */
export function liveOrphan(s: QueueState, id: string): { pid: number; pidFileMs: number } | undefined {
  const pid = s.store.readPid(id);
  return pid !== undefined && isSameWorker(pid.pid, pid.pidFileMs) ? pid : undefined;
}

/** Poll orphans (workers from before a restart): once gone, back to que. */
export function checkOrphans(s: QueueState): void {
  for (const r of s.run.values()) {
    if (!r.orphan || r.finishing || isSameWorker(r.orphan.pid, r.orphan.pidFileMs)) continue;
    r.finishing = true;
    s.log.info({ msg_id: r.id, worker_pid: r.orphan.pid }, 'worker from before the restart has exited; requeued');
    void finishRun(s, r, { state: 'que', delaySec: 0 });
  }
}
