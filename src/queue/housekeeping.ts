/**
 * Housekeeping of one queue, in the queue process that owns its directories: the `clean`
 * command, which removes the done, relayed and err messages over the queue's retention
 * limits (domain/retention.ts), and the disk usage its `stats` reply shows
 * (store/disk-usage.ts).
 *
 * The queue counts its final states incrementally (state.ts), so a clean runs here, in
 * the queue process, and never behind its back: a message leaves its state by one rename
 * into the queue's trash (store `discard`, the commit point), and the counts forget it at
 * that instant. A message someone else deleted meanwhile is skipped, so counts stay exact.
 * So is a message still being finished (still in memory's `run`): its rename into the
 * state is done, but it is counted only once the move is durable, and forgetting it
 * before that would leave a ghost in the counts. It goes at the next clean. A message
 * whose own TTL holds in its final state (a Workq result) is left to that TTL.
 *
 * Messages are taken oldest first as retention.ts ages them: done and relayed by the
 * time in their ids (the store lists them in that order), err by the time each entered
 * err (its directory's ctime, store `enteredAt`), so err is listed, then sorted.
 *
 * Deleting is spread over time (measured: after some 20,000 deletions, creating
 * files on this ext4 is much slower for minutes): at most BATCH_MESSAGES messages are
 * taken, their trash deleted, the minute/hour/day directories they emptied removed, and
 * the next batch waits BATCH_PAUSE_MS, so a clean deletes at most 5,000 messages a
 * second and the event loop runs in between. States are cleaned one after the other.
 * Before each batch the admin flags are read again: a queue gone DOWN (hands off) stops
 * the clean there, and its reply says so (`stopped`).
 *
 * One clean at a time: a `clean` while one runs joins it (its limits stay those of the
 * first). The command waits at most CLEAN_REPLY_WAIT_MS, then replies with the progress
 * so far and `finished: false`; the clean carries on and the caller asks again. A long
 * clean never outlives an RPC's timeouts, and a clean interrupted by a crash leaves only
 * a trash, which the next clean deletes first.
 *
 * Disk usage: the last measurement is kept. Asking for it starts a new one in the
 * background when the last started at least USAGE_REFRESH_MS ago, and a finished clean
 * starts one; either way a queue so big that a walk takes long is walked at most a tenth
 * of the time (USAGE_MAX_SHARE). No request ever waits for a walk.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError } from '../domain/errors.js';
import { idTimeMs } from '../domain/ids.js';
import {
  AGE_FROM,
  CLEANED_STATES,
  isSelected,
  limitsByState,
  planClean,
  planRemovesAny,
  type CleanOverride,
  type CleanedState,
  type CleanerConfig,
  type RetentionLimits,
} from '../domain/retention.js';
import { HASHED_STATES } from '../domain/states.js';
import type { CleanReport, DiskUsage, StateUsage } from '../rpc/queue-api.js';
import { emptyTrash, measureQueue, measureState, treeBytes } from '../store/disk-usage.js';
import { refreshFlags } from './flags.js';
import { forgetErr } from './pull-messages.js';
import type { QueueState } from './state.js';
import { keepsOwnTtl } from './timers.js';

/** Messages taken out of their state per batch. */
const BATCH_MESSAGES = 500;
/** The pause before each batch after the first. */
const BATCH_PAUSE_MS = 100;
/** How long the `clean` command waits for the clean before it replies with the progress. */
const CLEAN_REPLY_WAIT_MS = 20_000;
/** Disk usage is measured at most this often. */
const USAGE_REFRESH_MS = 60_000;
/** …and a walk may take at most this share of the time between walks. */
const USAGE_MAX_SHARE = 0.1;


/** Ends a clean between two batches because the queue went DOWN: not an error. */
class CleanStopped extends Error {
  override readonly name = 'CleanStopped';
}

/** A message as a clean walks it: its id and the time its age counts from (retention.ts AGE_FROM). */
interface Aged {
  id: string;
  sinceMs: number | undefined;
}

/**
 * The `clean` command: start a clean with these limits (or join the running one), wait
 * for it at most CLEAN_REPLY_WAIT_MS, and report. Never rejects: a failure is the
 * report's `error`.
 */
export async function clean(s: QueueState, config: CleanerConfig, override: CleanOverride): Promise<CleanReport> {
const h = s.housekeeping;
  if (!h.running) {
    const none = (): StateUsage => ({ messages: 0, bytes: 0 });
    const report: CleanReport = {
      finished: false,
      started_at: Math.floor(Date.now() / 1000),
      limits: limitsByState(config, override),
      removed: { done: none(), relayed: none(), err: none() },
      batches: 0,
    };
    const done = run(s, report).finally(() => {
      report.finished = true;
      h.running = undefined;
      measureAfterClean(s);
    });
    h.running = { report, done };
  }
  const { report, done } = h.running;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, CLEAN_REPLY_WAIT_MS)))]);
  clearTimeout(timer);
  return structuredClone(report);
}

/** The last disk usage measured (null before the first), refreshed in the background when stale. */
export function diskUsage(s: QueueState): DiskUsage | null {
  measureIfOlder(s, s.housekeeping.stale ? 0 : USAGE_REFRESH_MS);
  return s.housekeeping.usage;
}

/** After a clean: measure again now, or once the walk under way (which may predate the clean) ends. */
function measureAfterClean(s: QueueState): void {
  s.housekeeping.stale = true;
  measureIfOlder(s, 0);
}

  /**
   * Start a walk in the background unless one runs, or the last started less than `ms`
   * ago, or than a walk of this queue may take up (USAGE_MAX_SHARE).
   */
function measureIfOlder(s: QueueState, ms: number): void {
  const h = s.housekeeping;
  const gapMs = Math.max(ms, (h.usage?.took_ms ?? 0) / USAGE_MAX_SHARE);
  if (h.measuring || Date.now() - h.usageStartedMs < gapMs) return;
  h.measuring = true;
  h.stale = false;
  h.usageStartedMs = Date.now();
  measureQueue(s.layout, s.store)
    .then((usage) => {
      h.usage = usage;
    })
    .catch((e: unknown) => s.log.warn({ err: coerceError(e).message }, 'cannot measure disk usage'))
    .finally(() => {
      h.measuring = false;
      if (h.stale) measureIfOlder(s, 0);
    });
}

async function run(s: QueueState, report: CleanReport): Promise<void> {
  const { layout, log } = s;
  /** Before each batch: the pause (except before the first), then the DOWN check. */
  const pace = async (): Promise<void> => {
    if (report.batches > 0) await sleep(BATCH_PAUSE_MS);
    refreshFlags(s);
    if (s.admin === 'DOWN') throw new CleanStopped('status: DOWN');
    report.batches++;
  };
  try {
    const leftover = await emptyTrash(layout);
    if (leftover > 0) log.info({ bytes: leftover }, 'deleted the trash an interrupted clean left');
    for (const state of CLEANED_STATES) await cleanState(s, state, report.limits[state], report.removed[state], pace);
    log.info({ removed: report.removed, limits: report.limits }, 'clean finished');
  } catch (e) {
    if (e instanceof CleanStopped) {
      report.stopped = 'status: DOWN';
      log.info({ removed: report.removed }, 'clean stopped: the queue is DOWN');
      return;
    }
    report.error = coerceError(e).message;
    log.error({ err: report.error, removed: report.removed }, 'clean stopped by an error');
  }
}

  /**
   * A state's messages in the order a clean takes them, oldest first (see above), in
   * groups of one directory. err is flat, so it is one group, sorted by the time each
   * message entered err (then by id); a message gone meanwhile is left out.
   */
async function* oldestFirst(s: QueueState, state: CleanedState): AsyncGenerator<{ dir: string; messages: Aged[] }> {
  const { store } = s;
  if (AGE_FROM[state] === 'id') {
    for await (const { dir, ids } of store.groups(state, 'oldest')) yield { dir, messages: ids.map((id) => ({ id, sinceMs: idTimeMs(id) })) };
    return;
  }
  for await (const { dir, ids } of store.groups(state)) {
    const messages: Array<{ id: string; sinceMs: number }> = [];
    for (const id of ids) {
      const sinceMs = await store.enteredAt(state, id);
      if (sinceMs !== undefined) messages.push({ id, sinceMs });
    }
    messages.sort((a, b) => a.sinceMs - b.sinceMs || (a.id < b.id ? -1 : 1));
    yield { dir, messages };
  }
}

  /**
   * One state: plan (a bytes limit needs this state measured first), then walk oldest
   * first while the plan selects, taking messages in batches. The bytes a message would
   * free are measured with one set of multiply linked files for the whole walk, as the
   * state was measured: a file the messages of this state share counts once, with the
   * oldest of them.
   */
async function cleanState(s: QueueState, state: CleanedState, limits: RetentionLimits, removed: StateUsage, pace: () => Promise<void>): Promise<void> {
  const { store, layout } = s;
  const bytes = limits.max_bytes === null ? {} : { bytes: (await measureState(layout, store, state)).bytes };
  const plan = planClean(limits, { count: state === 'err' ? s.errIds.size : s.counts[state], ...bytes }, Date.now());
  if (!planRemovesAny(plan)) return;
  const progress = { removed: 0, freedBytes: 0 };
  const seen = new Set<string>();
  let batch: string[] = [];
  /** Minute directories the walk went through whole: removed once empty (a message still finishing keeps one). */
  let emptied: string[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length > 0) {
      await pace();
      for (const id of batch) {
        if (store.discard(state, id)) {
          if (state === 'err') forgetErr(s, id);
          else s.counts[state]--;
          removed.messages++;
        }
      }
      batch = [];
      const freed = await emptyTrash(layout);
      removed.bytes += freed;
    }
    for (const dir of emptied) store.pruneHashed(dir);
    emptied = [];
  };
  walk: for await (const group of oldestFirst(s, state)) {
    for (const { id, sinceMs } of group.messages) {
      if (!isSelected(plan, progress, sinceMs)) break walk;
      // A run leaves `run` (finish-run.ts) only after its final state counts it.
      if (s.run.has(id) || keepsOwnTtl(s, state, id)) continue;
      if (plan.bytesOver > 0) {
        const bytesOfMessage = await treeBytes(path.join(group.dir, id), seen);
        progress.freedBytes += bytesOfMessage;
      }
      progress.removed++;
      batch.push(id);
      if (batch.length >= BATCH_MESSAGES) await flush();
    }
    if (HASHED_STATES.has(state)) emptied.push(group.dir);
  }
  await flush();
}
