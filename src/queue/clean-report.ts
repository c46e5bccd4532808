/**
 * The `clean` command's reply (housekeeping.ts): what a clean removed so far, per state,
 * under which limits. Its own module so that the queue state (state.ts), which holds the
 * clean under way, and the cleaner worker can name it.
 */
import type { CleanedState, RetentionLimits } from '../domain/retention.js';
import type { DiskUsage } from '../store/disk-usage.js';

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
  /** Batches of at most BATCH_MESSAGES messages taken so far, over all states. */
  batches: number;
  /** Why the clean stopped before it was through, on purpose: the queue went DOWN (the next clean goes on). */
  stopped?: 'status: DOWN';
  /** Why the clean stopped early (a filesystem error), when it did. */
  error?: string;
}

/** The memory of housekeeping: the clean under way, and the disk usage last measured. */
export interface HousekeepingState {
  running: { report: CleanReport; done: Promise<void> } | undefined;
  usage: DiskUsage | null;
  measuring: boolean;
  /** A clean finished since the last walk started: walk again as soon as the walk share allows. */
  stale: boolean;
  usageStartedMs: number;
}
