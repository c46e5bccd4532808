/**
 * Housekeeping of one queue, in the queue process that owns its directories: the `clean`
 * command, which removes the done, relayed and err messages over the queue's retention
 * limits (domain/retention.ts), and the disk usage its `stats` reply shows
 * (store/disk-usage.ts).
 *
 * The engine counts its final states incrementally, so a clean runs here and never
 * behind its back: a message leaves its state by one rename into the queue's trash
 * (store `discard`, the commit point), and the engine forgets it (`forget`) at that
 * instant. A message someone else deleted meanwhile is skipped, so counts stay exact.
 *
 * Deleting is spread over time (ARCHITECTURE.md: after some 20,000 deletions, creating
 * files on this ext4 is much slower for minutes): at most BATCH_MESSAGES messages are
 * taken, their trash deleted, the minute/hour/day directories they emptied removed, and
 * the next batch waits BATCH_PAUSE_MS, so a clean deletes at most 5,000 messages a
 * second and the event loop runs in between. States are cleaned one after the other.
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
import {
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
import type { Logger } from '../lib/logger.js';
import { emptyTrash, measureQueue, measureState, treeBytes, type DiskUsage } from '../store/disk-usage.js';
import type { QueueLayout } from '../store/layout.js';
import type { MessageStore } from '../store/message-store.js';

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

export interface HousekeepingDeps {
  store: MessageStore;
  layout: QueueLayout;
  log: Logger;
  /** How many messages the engine counts in a final state. */
  count(state: CleanedState): number;
  /** A clean took this message out of its state: the engine forgets it. */
  forget(state: CleanedState, id: string): void;
}

export interface Removed {
  messages: number;
  /** Bytes the deletion freed (disk-usage.ts). */
  bytes: number;
}

/** The `clean` reply: what the clean removed so far, per state, under which limits. */
export interface CleanReport {
  finished: boolean;
  /** Epoch seconds. */
  started_at: number;
  limits: Record<CleanedState, RetentionLimits>;
  removed: Record<CleanedState, Removed>;
  /** Why the clean stopped early (a filesystem error), when it did. */
  error?: string;
}

export class Housekeeping {
  private readonly d: HousekeepingDeps;
  private running: { report: CleanReport; done: Promise<void> } | undefined;
  private usage: DiskUsage | null = null;
  private measuring = false;
  /** A clean finished since the last walk started: walk again as soon as the walk share allows. */
  private stale = false;
  private usageStartedMs = -Infinity;

  constructor(deps: HousekeepingDeps) {
    this.d = deps;
  }

  /**
   * The `clean` command: start a clean with these limits (or join the running one), wait
   * for it at most `waitMs`, and report. Never rejects: a failure is the report's `error`.
   */
  async clean(config: CleanerConfig, override: CleanOverride, waitMs = CLEAN_REPLY_WAIT_MS): Promise<CleanReport> {
    if (!this.running) {
      const none = (): Removed => ({ messages: 0, bytes: 0 });
      const report: CleanReport = {
        finished: false,
        started_at: Math.floor(Date.now() / 1000),
        limits: limitsByState(config, override),
        removed: { done: none(), relayed: none(), err: none() },
      };
      const done = this.run(report).finally(() => {
        report.finished = true;
        this.running = undefined;
        this.measureAfterClean();
      });
      this.running = { report, done };
    }
    const { report, done } = this.running;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    return structuredClone(report);
  }

  /** The last disk usage measured (null before the first), refreshed in the background when stale. */
  diskUsage(): DiskUsage | null {
    this.measureIfOlder(this.stale ? 0 : USAGE_REFRESH_MS);
    return this.usage;
  }

  /** After a clean: measure again now, or once the walk under way (which may predate the clean) ends. */
  private measureAfterClean(): void {
    this.stale = true;
    this.measureIfOlder(0);
  }

  /**
   * Start a walk in the background unless one runs, or the last started less than `ms`
   * ago, or than a walk of this queue may take up (USAGE_MAX_SHARE).
   */
  private measureIfOlder(ms: number): void {
    const gapMs = Math.max(ms, (this.usage?.took_ms ?? 0) / USAGE_MAX_SHARE);
    if (this.measuring || Date.now() - this.usageStartedMs < gapMs) return;
    this.measuring = true;
    this.stale = false;
    this.usageStartedMs = Date.now();
    measureQueue(this.d.layout, this.d.store)
      .then((usage) => {
        this.usage = usage;
      })
      .catch((e: unknown) => this.d.log.warn({ err: coerceError(e).message }, 'cannot measure disk usage'))
      .finally(() => {
        this.measuring = false;
        if (this.stale) this.measureIfOlder(0);
      });
  }

  private async run(report: CleanReport): Promise<void> {
    const { layout, log } = this.d;
    let batches = 0;
    /** Before each batch: the pause, except before the first. */
    const pace = async (): Promise<void> => {
      if (batches++ > 0) await sleep(BATCH_PAUSE_MS);
    };
    try {
      const leftover = await emptyTrash(layout);
      if (leftover > 0) log.info({ bytes: leftover }, 'deleted the trash an interrupted clean left');
      for (const state of CLEANED_STATES) await this.cleanState(state, report.limits[state], report.removed[state], pace);
      log.info({ removed: report.removed, limits: report.limits }, 'clean finished');
    } catch (e) {
      report.error = coerceError(e).message;
      log.error({ err: report.error, removed: report.removed }, 'clean stopped by an error');
    }
  }

  /**
   * One state: plan (a bytes limit needs this state measured first), then walk oldest
   * first while the plan selects, taking messages in batches.
   */
  private async cleanState(state: CleanedState, limits: RetentionLimits, removed: Removed, pace: () => Promise<void>): Promise<void> {
    const { store, layout } = this.d;
    const bytes = limits.max_bytes === null ? {} : { bytes: (await measureState(layout, store, state)).bytes };
    const plan = planClean(limits, { count: this.d.count(state), ...bytes }, Date.now());
    if (!planRemovesAny(plan)) return;
    const progress = { removed: 0, freedBytes: 0 };
    let batch: string[] = [];
    /** Minute directories whose every message is in a batch: removed once they are empty. */
    let emptied: string[] = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0 && emptied.length === 0) return;
      await pace();
      for (const id of batch) {
        if (store.discard(state, id)) {
          this.d.forget(state, id);
          removed.messages++;
        }
      }
      batch = [];
      const freed = await emptyTrash(layout);
      removed.bytes += freed;
      for (const dir of emptied) store.pruneHashed(dir);
      emptied = [];
    };
    walk: for await (const group of store.groups(state, 'oldest')) {
      for (const id of group.ids) {
        if (!isSelected(plan, progress, id)) break walk;
        if (plan.bytesOver > 0) {
          const bytesOfMessage = await treeBytes(path.join(group.dir, id));
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
}
